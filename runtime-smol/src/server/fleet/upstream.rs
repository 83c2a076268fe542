//! A fleet room's upstream: rindled at the endpoint room-boot named, with the lease it
//! granted. The room never mints a lease itself: when the host asks for a new one (the
//! lease died), the fleet re-boots the room, which is a new placement (a new epoch).

use async_channel::Sender;

use crate::server::clock::BoxFuture;
use crate::server::upstream::{connect_ws, UpstreamConnector, UpstreamLink};

/// The upstream of one fleet room.
#[derive(Clone, Debug)]
pub(crate) struct FleetUpstream {
    pub doc: String,
    /// rindled's websocket endpoint.
    pub ws_url: String,
    /// `rindle.v1, <ticket>` when room-boot returned an affinity ticket.
    pub protocols: Option<String>,
    pub client_id: Option<String>,
    /// Tells the fleet this room needs a new lease (a re-boot).
    pub relet: Sender<String>,
}

impl UpstreamConnector for FleetUpstream {
    fn mint_lease(&self) -> BoxFuture<'static, Result<String, String>> {
        let _ = self.relet.try_send(self.doc.clone());
        Box::pin(async {
            Err(String::from(
                "a fleet room's lease comes from room-boot: the room re-boots for a new one",
            ))
        })
    }

    fn connect(&self) -> BoxFuture<'static, Result<UpstreamLink, String>> {
        let url = self.ws_url.clone();
        let protocols = self.protocols.clone();
        Box::pin(async move { connect_ws(&url, protocols.as_deref()).await })
    }

    fn client_id(&self) -> Option<String> {
        self.client_id.clone()
    }
}
