//! A connection's inbound window: the frames it has read that the owner has not
//! handled yet, bounded by count and by bytes.
//!
//! The owner's event queue is shared by every connection and the upstream leg;
//! without a window, a client that writes faster than the room handles its frames would
//! grow that queue without bound. At either cap the connection stops reading its socket
//! until the owner drops an event, so TCP pushes back on the client: nothing is
//! dropped and order is kept. A lone frame always fits (the byte cap is validated to be
//! at least `max_frame_bytes`, and an empty window takes anything).

use std::sync::{Arc, Mutex};

use event_listener::Event;

/// How many of one connection's frames may wait for the owner at once.
pub const INBOUND_WINDOW_FRAMES: usize = 64;

#[derive(Debug, Default)]
struct Held {
    frames: usize,
    bytes: usize,
    closed: bool,
}

/// One connection's window (shared by its reader and the slots it hands out).
#[derive(Debug)]
pub struct InboundWindow {
    held: Mutex<Held>,
    freed: Event,
    max_frames: usize,
    max_bytes: usize,
}

impl InboundWindow {
    /// A window of `max_frames` frames and `max_bytes` bytes.
    pub fn new(max_frames: usize, max_bytes: usize) -> Arc<InboundWindow> {
        Arc::new(InboundWindow {
            held: Mutex::new(Held::default()),
            freed: Event::new(),
            max_frames,
            max_bytes,
        })
    }

    fn try_take(self: &Arc<Self>, bytes: usize) -> Result<Option<InboundSlot>, ()> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if held.closed {
            return Err(());
        }
        let fits = held.frames == 0
            || (held.frames < self.max_frames && held.bytes + bytes <= self.max_bytes);
        if !fits {
            return Ok(None);
        }
        held.frames += 1;
        held.bytes += bytes;
        Ok(Some(InboundSlot {
            window: self.clone(),
            bytes,
        }))
    }

    /// Waits for room for a frame of `bytes`; `None` once the window is closed.
    pub async fn take(self: &Arc<Self>, bytes: usize) -> Option<InboundSlot> {
        loop {
            if let Some(slot) = self.try_take(bytes).ok()? {
                return Some(slot);
            }
            let listener = self.freed.listen();
            // Re-check: a slot may have been freed before the listener existed.
            if let Some(slot) = self.try_take(bytes).ok()? {
                return Some(slot);
            }
            listener.await;
        }
    }

    /// Ends every wait (the connection is going away).
    pub fn close(&self) {
        self.held.lock().unwrap_or_else(|p| p.into_inner()).closed = true;
        self.freed.notify(usize::MAX);
    }

    /// `(frames, bytes)` held now.
    #[cfg(test)]
    fn held(&self) -> (usize, usize) {
        let h = self.held.lock().unwrap();
        (h.frames, h.bytes)
    }
}

/// One inbound frame's place in its connection's window: taken before the frame is
/// queued for the owner, given back when the owner drops the event (after
/// handling it).
#[derive(Debug)]
pub struct InboundSlot {
    window: Arc<InboundWindow>,
    bytes: usize,
}

impl Drop for InboundSlot {
    fn drop(&mut self) {
        {
            let mut held = self.window.held.lock().unwrap_or_else(|p| p.into_inner());
            held.frames -= 1;
            held.bytes -= self.bytes;
        }
        self.window.freed.notify(usize::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_lite::future::poll_once;

    #[test]
    fn the_window_holds_frames_until_the_room_task_drops_them() {
        smol::block_on(async {
            let window = InboundWindow::new(4, 1_000_000);
            let mut slots = Vec::new();
            for _ in 0..4 {
                slots.push(window.take(10).await.expect("a free place"));
            }
            // The window is full: the reader waits (it stops reading its socket).
            let mut next = Box::pin(window.take(10));
            assert!(poll_once(&mut next).await.is_none());
            // The owner handles (drops) one frame: the reader goes on.
            drop(slots.pop());
            assert!(next.await.is_some());
        });
    }

    #[test]
    fn the_window_caps_bytes_but_always_takes_a_lone_frame() {
        smol::block_on(async {
            let window = InboundWindow::new(64, 100);
            let a = window.take(60).await.unwrap();
            let mut b = Box::pin(window.take(50));
            assert!(poll_once(&mut b).await.is_none(), "60 + 50 > 100 waits");
            assert_eq!(window.held(), (1, 60));
            drop(a);
            let b = b.await.unwrap();
            assert_eq!(window.held(), (1, 50));
            drop(b);
            // Larger than the cap, but alone: taken (a frame must always get through).
            let big = window.take(500).await.unwrap();
            assert_eq!(window.held(), (1, 500));
            drop(big);
            assert_eq!(window.held(), (0, 0));
        });
    }

    #[test]
    fn closing_the_window_ends_the_wait() {
        smol::block_on(async {
            let window = InboundWindow::new(1, 100);
            let _held = window.take(1).await.unwrap();
            let mut next = Box::pin(window.take(1));
            assert!(poll_once(&mut next).await.is_none());
            window.close();
            assert!(next.await.is_none());
        });
    }
}
