//! Carrying out what the host asks: socket writes and closes go to the connection
//! tasks, journal operations to the serial writer, authority calls and lease mints to
//! their own tasks, the upstream link to its task; control replies, log lines and the
//! start / live / stopped signals are answered here.

use rindle_room_core::host::{AuthorityReply, Level, Output};

use super::journal_writer::JournalJob;
use super::{Actor, Event};
use crate::server::error::StartError;
use crate::server::log::{Level as LogLevel, ROOM_TARGET};
use crate::server::upstream::{FromUpstream, ToUpstream};

impl Actor {
    /// Carries out every output the host has queued.
    pub(super) fn carry_out(&mut self) {
        while let Some(o) = self.host.poll_output() {
            self.carry(o);
        }
        self.metrics.sync(self.host.counters());
    }

    fn carry(&mut self, o: Output) {
        match o {
            Output::Started => {
                if let Some(tx) = self.started.take() {
                    let _ = tx.try_send(Ok(()));
                }
            }
            Output::StartFailed { reason } => {
                if let Some(tx) = self.started.take() {
                    let _ = tx.try_send(Err(StartError::Host(reason)));
                }
                self.stopped = true;
            }
            Output::StopAccepting => self.stop_listeners = None,
            Output::Stopped { moved } => {
                if moved {
                    self.moved.store(true, std::sync::atomic::Ordering::SeqCst);
                }
                self.stop_listeners = None;
                self.up = None;
                self.stopped = true;
                // Requests the host will never answer: dropping their senders tells
                // the callers the room is closed.
                self.waiters.clear();
            }
            Output::Stranded { mutations } => {
                if let Some(sink) = &self.stranded {
                    sink(mutations);
                }
            }
            Output::Live { .. } => {
                for w in self.live_waiters.drain(..) {
                    let _ = w.try_send(());
                }
            }
            Output::Send { conn, text, class } => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.send(text, class);
                }
            }
            Output::Close {
                conn,
                code,
                reason,
                discard_queued,
            } => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.close(code, &reason, discard_queued);
                }
            }
            Output::Terminate { conn } => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.terminate();
                }
            }
            Output::MintLease => self.mint_lease(),
            Output::OpenUpstream { link } => self.open_upstream(link),
            Output::CloseUpstream => {
                self.up = None;
                self.want_link = 0;
            }
            Output::UpstreamSend { link, text } => self.to_upstream(link, ToUpstream::Frame(text)),
            Output::PingUpstream { link } => self.to_upstream(link, ToUpstream::Ping),
            Output::Ping { conn } => {
                if let Some(c) = self.conns.get_mut(&conn) {
                    c.ping();
                }
            }
            Output::JournalRead { io } => self.journal(JournalJob::Read(io)),
            Output::JournalAppend { io, entries } => {
                self.journal(JournalJob::Append { io, entries })
            }
            Output::JournalAppendFlush { io, record } => {
                self.journal(JournalJob::AppendFlush { io, record })
            }
            Output::JournalConfirmFlush { io, seq } => {
                self.journal(JournalJob::ConfirmFlush { io, seq })
            }
            Output::JournalCompact { io, durable } => {
                self.journal(JournalJob::Compact { io, durable })
            }
            Output::AuthorityClaim { io, doc } => {
                self.authority_call(io, move |a| {
                    Box::pin(async move { a.claim_epoch(&doc).await.map(AuthorityReply::Claimed) })
                });
            }
            Output::AuthorityLmids { io, doc, clients } => {
                self.authority_call(io, move |a| {
                    Box::pin(
                        async move { a.lmids(&doc, &clients).await.map(AuthorityReply::Lmids) },
                    )
                });
            }
            Output::AuthorityApply { io, body } => {
                self.authority_call(io, move |a| {
                    Box::pin(async move {
                        a.apply_row_change_txn(&body)
                            .await
                            .map(AuthorityReply::Applied)
                    })
                });
            }
            Output::ControlReply { id, reply } => self.reply(id, reply),
            Output::Log { level, text } => {
                let level = match level {
                    Level::Debug => LogLevel::Debug,
                    Level::Info => LogLevel::Info,
                    Level::Warn => LogLevel::Warn,
                    Level::Error => LogLevel::Error,
                };
                self.log.log_to(ROOM_TARGET, level, &text);
            }
            // An output a newer core adds: this driver does not know how to carry it.
            _ => {}
        }
    }

    fn journal(&mut self, job: JournalJob) {
        match &self.journal_jobs {
            Some(jobs) => {
                let _ = jobs.try_send(job);
            }
            None => {
                // No journal: the host only asks for one with a write plane, which always
                // has one; answer so nothing waits forever.
                let ev = match job {
                    JournalJob::Read(io) => Event::JournalRead {
                        io,
                        result: Err(std::sync::Arc::new(std::io::Error::other(
                            "no journal configured",
                        ))),
                    },
                    other => Event::JournalWritten {
                        io: other.io(),
                        result: Err(std::sync::Arc::new(std::io::Error::other(
                            "no journal configured",
                        ))),
                    },
                };
                let _ = self.events.try_send(ev);
            }
        }
    }

    fn authority_call(
        &mut self,
        io: u64,
        call: impl FnOnce(
                std::sync::Arc<dyn crate::server::authority::Authority>,
            ) -> crate::server::clock::BoxFuture<
                'static,
                Result<AuthorityReply, rindle_room_core::host::AuthorityError>,
            > + Send
            + 'static,
    ) {
        let events = self.events.clone();
        let Some(authority) = self.authority.clone() else {
            let result = Err(rindle_room_core::host::AuthorityError::Fatal(String::from(
                "no authority configured",
            )));
            let _ = events.try_send(Event::Authority { io, result });
            return;
        };
        self.env.spawn(async move {
            let result = call(authority).await;
            let _ = events.send(Event::Authority { io, result }).await;
        });
    }

    fn mint_lease(&mut self) {
        let connector = self.connector.clone();
        let events = self.events.clone();
        self.env.spawn(async move {
            let result = connector.mint_lease().await;
            let _ = events.send(Event::LeaseMinted { result }).await;
        });
    }

    /// Hands `item` to upstream link `link`, if it is still the open one.
    fn to_upstream(&self, link: u64, item: ToUpstream) {
        if let Some((l, tx)) = &self.up {
            if *l == link {
                let _ = tx.try_send(item);
            }
        }
    }

    /// Opens upstream link `link`; its events come back tagged with it.
    fn open_upstream(&mut self, link: u64) {
        self.up = None; // dropping the sender closes a superseded link
        self.want_link = link;
        let connector = self.connector.clone();
        let events = self.events.clone();
        self.env.spawn(async move {
            match connector.connect().await {
                Ok(l) => {
                    let open = Event::UpOpen {
                        link,
                        to_upstream: l.to_upstream,
                    };
                    if events.send(open).await.is_err() {
                        return;
                    }
                    while let Ok(item) = l.from_upstream.recv().await {
                        let event = match item {
                            FromUpstream::Frame(text) => Event::UpFrame { link, text },
                            FromUpstream::Heard => Event::UpHeard { link },
                            FromUpstream::Failed(error) => {
                                let error = Some(error);
                                let _ = events.send(Event::UpClosed { link, error }).await;
                                return;
                            }
                        };
                        if events.send(event).await.is_err() {
                            return;
                        }
                    }
                    let _ = events.send(Event::UpClosed { link, error: None }).await;
                }
                Err(e) => {
                    let _ = events
                        .send(Event::UpClosed {
                            link,
                            error: Some(e.message),
                        })
                        .await;
                }
            }
        });
    }
}
