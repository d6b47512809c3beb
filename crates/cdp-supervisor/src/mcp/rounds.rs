//! `browser_handoff` for MCP 2026-07-28 clients, which take no
//! server-sent request: two rounds of `input_required`.
//!
//! Round one starts the handoff and returns the control link as a URL-mode
//! elicitation, with an opaque `requestState` (128 random bits naming the
//! handoff here, server-side: the state a client echoes is never trusted).
//! The client shows the link to its person; when they are done (or decline)
//! it calls again with their answer. Round two then waits for the hand-back
//! (at once when the person already pressed Done) and returns the result
//! `browser_handoff` always returns; a declined or cancelled answer ends the
//! handoff (`ended_by: "agent"`), as it does for a 2025-11-25 client.

use super::McpSession;
use crate::live::{EndedBy, Started, TaskLive};
use crate::tools::{AgentSession, HandoffEnd, ToolError, handoff_result};
use rmcp::RoleServer;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest,
    InputRequests, InputRequiredResult, InputResponses,
};
use rmcp::service::RequestContext;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// The key of the handoff's one input request.
const HANDOFF_KEY: &str = "handoff";

/// Handoffs between their two rounds, by request state.
#[derive(Default)]
pub(super) struct PendingHandoffs(Mutex<HashMap<String, Pending>>);

struct Pending {
    /// The task it belongs to: another task's request cannot claim it.
    task_id: String,
    live: Arc<TaskLive>,
    started: Started,
}

impl PendingHandoffs {
    fn insert(&self, state: String, p: Pending) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // Handoffs that ended without a second round (timed out, the task
        // closed) are forgotten here: the map holds live ones only.
        map.retain(|_, p| p.live.active_handoff() == Some(p.started.id));
        map.insert(state, p);
    }

    fn take(&self, state: &str, task_id: &str) -> Option<Pending> {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if map.get(state).is_some_and(|p| p.task_id == task_id) {
            map.remove(state)
        } else {
            None
        }
    }
}

impl McpSession {
    /// `browser_handoff` with `wait` for a 2026-07-28 client that declared
    /// URL elicitation: `Err` is the `input_required` to send.
    pub(super) async fn handoff_input_required(
        &self,
        agent: &AgentSession,
        args: Value,
        responses: Option<InputResponses>,
        state: Option<String>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Result<Value, InputRequiredResult>, ToolError> {
        if let Some(state) = state {
            return self
                .handoff_second_round(agent, &state, responses, context)
                .await
                .map(Ok);
        }
        let begun = Mutex::new(None);
        let outcome = agent
            .browser_handoff_with(args, |live, started, reason| {
                *begun.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some((live, started, reason));
                // Not waited for here: the second round waits.
                async { HandoffEnd::Cancelled }
            })
            .await;
        let Some((live, started, reason)) =
            begun.into_inner().unwrap_or_else(PoisonError::into_inner)
        else {
            // Not begun (bad arguments, a handoff under way…): the tool's
            // own result.
            return outcome.map(Ok);
        };
        let token = crate::live::tokens::fresh().map_err(|e| {
            ToolError::from(format!("cannot make the handoff's request state: {e}"))
        })?;
        let ask = InputRequest::Elicitation(ElicitRequest::new(
            ElicitRequestParams::UrlElicitationParams {
                meta: None,
                message: format!(
                    "The agent hands you its browser: {reason} Open the link, do it there, then press Done."
                ),
                url: started.url.clone(),
                elicitation_id: format!(
                    "handoff-{}-{}",
                    crate::handles::shown(agent.task_id()),
                    started.id
                ),
            },
        ));
        self.tasks.pending_handoffs.insert(
            token.clone(),
            Pending {
                task_id: agent.task_id().to_owned(),
                live,
                started,
            },
        );
        Ok(Err(InputRequiredResult::new(
            Some(InputRequests::from([(HANDOFF_KEY.to_owned(), ask)])),
            Some(token),
        )))
    }

    async fn handoff_second_round(
        &self,
        agent: &AgentSession,
        state: &str,
        responses: Option<InputResponses>,
        context: &RequestContext<RoleServer>,
    ) -> Result<Value, ToolError> {
        let Some(p) = self.tasks.pending_handoffs.take(state, agent.task_id()) else {
            return Err(ToolError::from(
                "browser_handoff: the requestState names no handoff of this task waiting for its second round (it ended, was already answered, or is another task's); call browser_handoff again".to_owned(),
            ));
        };
        let answer = responses
            .and_then(|mut r| r.remove(HANDOFF_KEY))
            .map(serde_json::from_value::<ElicitResult>);
        let accepted = matches!(&answer, Some(Ok(r)) if r.action == ElicitationAction::Accept);
        if !accepted {
            // Declined, cancelled, or no answer: the person will not come.
            let end = match p.live.end_handoff(Some(p.started.id), EndedBy::Agent) {
                Some(r) => HandoffEnd::Ended(r),
                None => HandoffEnd::Cancelled,
            };
            return Ok(handoff_result(&p.started, Some(end)));
        }
        let ticker = context
            .meta
            .get_progress_token()
            .map(|token| super::handoff_progress(context.peer.clone(), token));
        let end = tokio::select! {
            r = p.live.handed_back(p.started.id) => match r {
                Some(r) => HandoffEnd::Ended(r),
                None => HandoffEnd::Cancelled,
            },
            () = context.ct.cancelled() => {
                p.live.end_handoff(Some(p.started.id), EndedBy::Agent);
                HandoffEnd::Cancelled
            }
        };
        if let Some(t) = ticker {
            t.abort();
        }
        Ok(handoff_result(&p.started, Some(end)))
    }
}
