//! The tasks extension (`io.modelcontextprotocol/tasks`, rmcp's
//! [`TaskManager`]): a client that declares it gets `browser_navigate` and
//! `browser_wait` back at once as an MCP task, polled with `tasks/get`;
//! without it they block as before.
//!
//! An MCP task is not one of our tasks (a browser task, named by a handle):
//! it is one long call of one. It belongs to whoever started it — the HTTP
//! bearer token, and for a 2025-11-25 client its MCP session — and a poll
//! by anybody else gets the same error as an unknown id. Once a poll has
//! delivered a finished call's outcome, it is forgotten: a later poll is
//! that error too, so results do not pile up.

use super::{McpSession, Target, bearer, tool_result};
use crate::tools::ToolError;
use rmcp::model::{
    CallToolResult, CancelTaskParams, CreateTaskResult, GetTaskParams, GetTaskResult,
    UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// The tools a tasks-extension client gets back as an MCP task.
pub(super) const LONG_TOOLS: [&str; 2] = ["browser_navigate", "browser_wait"];

/// How often a client is asked to poll (a navigation's load, a wait's
/// event: a quarter second is well under what a person notices).
const POLL_INTERVAL_MS: u64 = 250;

/// How long a started call's state is kept: a `browser_wait` runs at most
/// 300 s; a finished one's outcome waits this long for its poll.
const TTL_MS: u64 = 15 * 60 * 1000;

/// Who started a long call: the bearer token, and for a 2025-11-25 client
/// the task of its MCP session.
#[derive(Clone, PartialEq, Eq)]
struct Owner {
    token: Option<[u8; 32]>,
    session_task: Option<String>,
}

/// The long calls of one server.
#[derive(Default)]
pub(super) struct LongCalls {
    manager: TaskManager,
    owners: Mutex<HashMap<String, Owner>>,
}

impl McpSession {
    fn owner(&self, context: &RequestContext<RoleServer>) -> Owner {
        Owner {
            token: bearer(context).map(|t| Sha256::digest(t.as_bytes()).into()),
            session_task: (!super::is_stateless(context))
                .then(|| self.own.get().map(|a| a.task_id().to_owned()))
                .flatten(),
        }
    }

    /// Starts tool `name` on `target` as an MCP task.
    pub(super) fn start_long_call(
        &self,
        name: String,
        args: Value,
        target: Target,
        context: &RequestContext<RoleServer>,
    ) -> CreateTaskResult {
        let options = TaskOptions::new()
            .with_ttl_ms(TTL_MS)
            .with_poll_interval_ms(POLL_INTERVAL_MS);
        let task = self.tasks.long_calls.manager.spawn(options, move |ctx| {
            Box::pin(async move {
                let result: Result<Value, ToolError> = tokio::select! {
                    r = target.agent.call(&name, args) => r,
                    () = ctx.cancelled() => return Err(TaskExit::Cancelled),
                };
                let mut shown = target.shown.lock().unwrap_or_else(PoisonError::into_inner);
                let r: CallToolResult = tool_result(&name, result, &mut shown);
                Ok(r)
            })
        });
        self.tasks
            .long_calls
            .owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(task.task_id.clone(), self.owner(context));
        CreateTaskResult::new(task)
    }

    /// The error for a task id this caller cannot see.
    fn no_such_call(id: &str) -> ErrorData {
        ErrorData::invalid_params(
            format!(
                "no MCP task {} of yours (it never existed, its outcome was already delivered by tasks/get, it expired, or another client started it)",
                crate::handles::shown(id)
            ),
            None,
        )
    }

    fn check_owner(&self, id: &str, context: &RequestContext<RoleServer>) -> Result<(), ErrorData> {
        let owners = self
            .tasks
            .long_calls
            .owners
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if owners.get(id) == Some(&self.owner(context)) {
            Ok(())
        } else {
            Err(Self::no_such_call(id))
        }
    }

    pub(super) fn get_long_call(
        &self,
        request: &GetTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.check_owner(&request.task_id, context)?;
        let detailed = self
            .tasks
            .long_calls
            .manager
            .get_task(&request.task_id)
            .map_err(|_| Self::no_such_call(&request.task_id))?;
        if detailed.status().is_terminal() {
            // Delivered: forgotten (see the module doc).
            self.tasks
                .long_calls
                .owners
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&request.task_id);
        }
        Ok(GetTaskResult::new(detailed))
    }

    pub(super) fn update_long_call(
        &self,
        request: UpdateTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.check_owner(&request.task_id, context)?;
        self.tasks
            .long_calls
            .manager
            .update_task(&request.task_id, request.input_responses)
    }

    pub(super) fn cancel_long_call(
        &self,
        request: &CancelTaskParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.check_owner(&request.task_id, context)?;
        self.tasks.long_calls.manager.cancel_task(&request.task_id)
    }
}
