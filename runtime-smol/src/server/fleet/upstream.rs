//! A fleet room's upstream: rindled at the endpoint room-boot named, with the lease it
//! granted. The room never mints a lease itself: when the host asks for a new one (the
//! lease died), the fleet re-boots the room, which is a new placement (a new epoch).
//!
//! An affinity ticket from room-boot is offered as `Sec-WebSocket-Protocol: rindle.v1,
//! <ticket>`. An edge selects `rindle.v1`; rindled itself selects no subprotocol, and
//! the websocket client refuses such a reply. The room then drops the ticket and
//! connects again at once without the header — in the same connect, so the host's
//! reconnect schedule never sees the refused handshake — and keeps connecting without
//! it. The box logs this once, naming the setting that pointed it at rindled.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_channel::Sender;

use rindle_room_core::fleet::drop_ticket_after;

use crate::server::clock::BoxFuture;
use crate::server::log::Logger;
use crate::server::upstream::{open_ws, ConnectError, MintError, UpstreamConnector, UpstreamLink};

/// The upstream of one fleet room.
#[derive(Clone)]
pub(crate) struct FleetUpstream {
    pub doc: String,
    /// rindled's websocket endpoint.
    pub ws_url: String,
    /// `rindle.v1, <ticket>` when room-boot returned an affinity ticket.
    pub protocols: Option<String>,
    /// The setting that named `ws_url`, for the line that says the ticket was refused.
    pub ws_url_setting: &'static str,
    pub client_id: Option<String>,
    /// The largest message taken from the socket (`fleet.upstream_max_frame_bytes`).
    pub frame_limit: crate::server::upstream::FrameLimit,
    /// Tells the fleet this room needs a new lease (a re-boot).
    pub relet: Sender<String>,
    /// The room's log.
    pub log: Logger,
    /// Set once the upstream selected no subprotocol: this room offers no ticket again.
    pub ticket_dropped: Arc<AtomicBool>,
    /// Box-wide: whether a room already logged that the upstream takes no tickets.
    pub ticket_refusal_logged: Arc<AtomicBool>,
}

impl std::fmt::Debug for FleetUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetUpstream")
            .field("doc", &self.doc)
            .field("ws_url", &self.ws_url)
            .field("offers_ticket", &self.protocols.is_some())
            .finish_non_exhaustive()
    }
}

impl FleetUpstream {
    /// The subprotocols to offer now: the ticket, unless the upstream refused it.
    fn offer(&self) -> Option<String> {
        if self.ticket_dropped.load(Ordering::Relaxed) {
            return None;
        }
        self.protocols.clone()
    }

    /// The upstream selected none of the offered subprotocols: drop the ticket, and say
    /// so — at warn once per box, at debug for every later room.
    fn drop_ticket(&self) {
        self.ticket_dropped.store(true, Ordering::Relaxed);
        if self.ticket_refusal_logged.swap(true, Ordering::Relaxed) {
            self.log.debug(&format!(
                "upstream {} selected no subprotocol: connecting without the affinity ticket",
                self.ws_url
            ));
            return;
        }
        self.log.warn(&format!(
            "upstream {} selected no subprotocol for room-boot's affinity ticket (offered as \
             `Sec-WebSocket-Protocol: rindle.v1, <ticket>`): it is rindled itself, which takes \
             no affinity tickets, so rooms connect to it without one. The endpoint comes from \
             {}; point that at the edge to keep follower affinity, or leave it if rooms are \
             meant to use rindled directly (this line is logged once)",
            self.ws_url, self.ws_url_setting
        ));
    }
}

impl UpstreamConnector for FleetUpstream {
    fn mint_lease(&self) -> BoxFuture<'static, Result<String, MintError>> {
        let _ = self.relet.try_send(self.doc.clone());
        Box::pin(async {
            Err(MintError::Unusable(String::from(
                "a fleet room's lease comes from room-boot: the room re-boots for a new one",
            )))
        })
    }

    fn connect(&self) -> BoxFuture<'static, Result<UpstreamLink, ConnectError>> {
        let me = self.clone();
        Box::pin(async move {
            let offer = me.offer();
            match open_ws(&me.ws_url, offer.as_deref(), me.frame_limit).await {
                Err(e) if drop_ticket_after(offer.is_some(), e.no_subprotocol_selected) => {
                    me.drop_ticket();
                    open_ws(&me.ws_url, None, me.frame_limit).await
                }
                opened => opened,
            }
        })
    }

    fn client_id(&self) -> Option<String> {
        self.client_id.clone()
    }
}
