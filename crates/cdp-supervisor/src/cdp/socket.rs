//! The connection's socket: reads go through a buffer that exists only
//! under load.
//!
//! An idle supervisor should cost little, and a flood should cost few
//! system calls; one fixed read buffer cannot do both (tungstenite
//! allocates its own up front, per connection, and reads at most that much
//! a call). So tungstenite gets a small buffer
//! ([`crate::cdp::connection::READ_BUFFER_SIZE`]), and below it
//! [`LoadBuffered`] reads straight into it while reads come in small; once
//! a read fills what tungstenite asked for (more is surely waiting), it
//! reads [`LOAD_READ_SIZE`] bytes a call into a buffer of its own and hands
//! them out, and gives that buffer back as soon as the socket has nothing
//! more to read.
//!
//! tungstenite also keeps the buffer its handshake read the HTTP response
//! with (4 KiB) as the connection's read buffer, in case frames came in the
//! same read. [`LoadBuffered::until_head_end`] hands the handshake nothing
//! past the response's head (the blank line that ends its headers), so
//! the WebSocket can start afresh on a small buffer with nothing lost.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes one read takes from the socket under load.
pub const LOAD_READ_SIZE: usize = 32 << 10;

/// A socket whose reads are buffered only under load (see the module).
/// Writes go straight through.
#[derive(Debug)]
pub struct LoadBuffered<S> {
    inner: S,
    /// Under load: [`LOAD_READ_SIZE`] bytes, `buf[start..end]` not handed
    /// out yet. Idle: empty, no allocation.
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// `Some(n)`: reads stop at the end of an HTTP head, of which `n`
    /// bytes of the closing `\r\n\r\n` have been handed out.
    head: Option<usize>,
}

/// What ends an HTTP head.
const HEAD_END: &[u8] = b"\r\n\r\n";
/// The buffer reads go through while the head is read.
const HEAD_READ_SIZE: usize = 1 << 10;

impl<S> LoadBuffered<S> {
    /// Wraps `inner`; no buffer until a read says there is load.
    pub fn new(inner: S) -> Self {
        LoadBuffered {
            inner,
            buf: Vec::new(),
            start: 0,
            end: 0,
            head: None,
        }
    }

    /// Wraps `inner` for a client handshake: reads hand out nothing past
    /// the end of the response's head; what the socket had after it comes
    /// with the reads after that.
    pub fn until_head_end(inner: S) -> Self {
        LoadBuffered {
            head: Some(0),
            ..LoadBuffered::new(inner)
        }
    }

    /// Whether the head has ended (always, unless made by
    /// [`LoadBuffered::until_head_end`]).
    pub fn head_done(&self) -> bool {
        self.head.is_none()
    }

    /// The room this socket holds for reads, in bytes (0 when idle).
    pub fn buffered_capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Hands out what is buffered, as much as `out` takes (while in a
    /// head, up to its end).
    fn hand_out(&mut self, out: &mut ReadBuf<'_>) {
        let mut n = out.remaining().min(self.end - self.start);
        if let Some(matched) = self.head.as_mut() {
            for (i, &b) in self.buf[self.start..self.start + n].iter().enumerate() {
                *matched = match b {
                    _ if b == HEAD_END[*matched] => *matched + 1,
                    b'\r' => 1,
                    _ => 0,
                };
                if *matched == HEAD_END.len() {
                    n = i + 1;
                    self.head = None;
                    break;
                }
            }
        }
        out.put_slice(&self.buf[self.start..self.start + n]);
        self.start += n;
        if self.start == self.end && self.head.is_none() && self.buf.len() != LOAD_READ_SIZE {
            // A head's buffer, drained.
            self.buf = Vec::new();
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for LoadBuffered<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.start == this.end {
            if this.head.is_some() && this.buf.is_empty() {
                this.buf = vec![0; HEAD_READ_SIZE];
            }
            if this.buf.is_empty() {
                // Idle: straight into the caller's buffer.
                let asked = out.remaining();
                let before = out.filled().len();
                ready!(Pin::new(&mut this.inner).poll_read(cx, out))?;
                if asked > 0 && out.filled().len() - before == asked {
                    // It filled: load. The next read goes through our buffer.
                    this.buf = vec![0; LOAD_READ_SIZE];
                }
                return Poll::Ready(Ok(()));
            }
            // Under load (or in a head): one large read, handed out piece by piece.
            let mut read = ReadBuf::new(&mut this.buf);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Pending => {
                    if this.head.is_none() {
                        // Nothing more to read: load is over, the buffer goes.
                        this.buf = Vec::new();
                    }
                    return Poll::Pending;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {
                    (this.start, this.end) = (0, read.filled().len());
                    if this.end == 0 {
                        // End of stream: say so (nothing put in `out`).
                        this.buf = Vec::new();
                        return Poll::Ready(Ok(()));
                    }
                }
            }
        }
        this.hand_out(out);
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for LoadBuffered<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn small_reads_go_straight_through_and_load_is_buffered_then_given_back() {
        let (mut peer, ours) = tokio::io::duplex(1 << 20);
        let mut ours = LoadBuffered::new(ours);
        // Idle: a read smaller than asked keeps no buffer.
        peer.write_all(b"hello").await.unwrap();
        let mut small = [0u8; 64];
        assert_eq!(ours.read(&mut small).await.unwrap(), 5);
        assert_eq!(&small[..5], b"hello");
        assert_eq!(ours.buffered_capacity(), 0);
        // Load: 200 KB waiting; 16-byte reads get every byte, in order,
        // through one buffer.
        let sent: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        peer.write_all(&sent).await.unwrap();
        let mut got = Vec::new();
        let mut chunk = [0u8; 16];
        while got.len() < sent.len() {
            let n = ours.read(&mut chunk).await.unwrap();
            assert!(n > 0);
            got.extend_from_slice(&chunk[..n]);
            if got.len() > 16 && got.len() < 100_000 {
                assert_eq!(ours.buffered_capacity(), LOAD_READ_SIZE);
            }
        }
        assert_eq!(got, sent);
        // Drained and nothing more to read: the buffer is given back.
        let waiting =
            tokio::time::timeout(std::time::Duration::from_millis(50), ours.read(&mut chunk));
        assert!(waiting.await.is_err(), "nothing to read");
        assert_eq!(ours.buffered_capacity(), 0);
        // End of stream comes through, whether buffered or not.
        peer.write_all(&[7u8; 16]).await.unwrap();
        drop(peer);
        let mut rest = Vec::new();
        ours.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest, vec![7u8; 16]);
    }

    #[tokio::test]
    async fn a_head_is_handed_out_alone_and_what_follows_it_comes_after() {
        let (mut peer, ours) = tokio::io::duplex(1 << 16);
        let mut ours = LoadBuffered::until_head_end(ours);
        // The head's end split across writes (and a lone `\r\n` inside it).
        let head = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n";
        peer.write_all(&head[..head.len() - 3]).await.unwrap();
        let mut got = Vec::new();
        let mut chunk = [0u8; 4096];
        let n = ours.read(&mut chunk).await.unwrap();
        got.extend_from_slice(&chunk[..n]);
        assert!(!ours.head_done());
        // The rest of the head and the first frames, in one write.
        peer.write_all(&head[head.len() - 3..]).await.unwrap();
        peer.write_all(b"FRAMES").await.unwrap();
        while !ours.head_done() {
            let n = ours.read(&mut chunk).await.unwrap();
            got.extend_from_slice(&chunk[..n]);
        }
        assert_eq!(got, head, "nothing past the head's end");
        let n = ours.read(&mut chunk).await.unwrap();
        assert_eq!(&chunk[..n], b"FRAMES");
        assert_eq!(
            ours.buffered_capacity(),
            0,
            "the head's buffer is given back"
        );
    }
}
