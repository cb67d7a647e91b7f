//! A reput pass in batches. One reader cuts the readable CommitLog into
//! contiguous batches by hopping record sizes (cheap), a few per parser;
//! the parsers decode them (the expensive part: properties, keys, tags) in
//! parallel while this thread applies the parsed batches strictly in log
//! order, so every queue sees its units in order.
//! With one parser (the default) this is the serial reput; with
//! `enableBuildConsumeQueueConcurrently` (as in RocketMQ 5.x) it is the
//! concurrent one, and both build the same consume queues.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::sync_channel;

use rmq_common::message::record::{peek_frame, Frame};
use rmq_common::DispatchRequest;
use rmq_store_file::StoreError;

use super::{corrupt, Dispatcher, Pass, MAX_RECORDS_PER_PASS};

/// Batches cut per parser and pass: enough that applying one batch
/// overlaps parsing the next ones.
const CUTS_PER_WORKER: usize = 4;

/// A contiguous run of whole records, as byte positions in the selection.
#[derive(Debug, Clone, Copy)]
struct Cut {
    start: usize,
    end: usize,
}

impl Dispatcher {
    pub(super) fn dispatch_batches(&self) -> Result<Pass, StoreError> {
        let _only_one = self.pass_lock.lock();
        let Some(from) = self.pass_start() else {
            return Ok(Pass::Idle);
        };
        let Some(sel) = self.commit_log.select_from(from) else {
            return Ok(Pass::Idle);
        };
        let bytes = sel.bytes();
        // A bounded pass (a shadow catching up) stops at `until`, which is
        // always where a pass of the serving dispatch ended: a record start.
        let until = self.until.load(std::sync::atomic::Ordering::Acquire);
        let bytes = &bytes[..bytes.len().min(usize::try_from(until - from).unwrap_or(0))];
        // The confirm limit may fall inside a record: that record waits.
        let confirm = self
            .confirm_limit
            .load(std::sync::atomic::Ordering::Acquire);
        let clipped = usize::try_from(confirm - from).unwrap_or(0) < bytes.len();
        let bytes = &bytes[..bytes
            .len()
            .min(usize::try_from(confirm - from).unwrap_or(0))];
        let (cuts, segment_end) = self.cut(bytes, from, clipped)?;
        let end_of_cuts = cuts.last().map_or(0, |c| c.end);
        let next_of = |cut: &Cut| match (cut.end == end_of_cuts, segment_end) {
            (true, Some(next)) => next,
            _ => from + cut.end as i64,
        };
        let total = if cuts.len() <= 1 || self.parse_workers == 1 {
            let mut total = 0;
            for cut in &cuts {
                let requests = self.parse_cut(bytes, from, *cut)?;
                self.apply(&requests, from + cut.start as i64, next_of(cut))?;
                total += requests.len();
            }
            total
        } else {
            self.parse_and_apply(bytes, from, &cuts, next_of)?
        };
        if cuts.is_empty() {
            match segment_end {
                Some(next) if next != from => self.apply(&[], from, next)?,
                _ => return Ok(Pass::Idle),
            }
        }
        Ok(Pass::Progress(total))
    }

    /// The pipeline: `parse_workers` threads take cuts in turn and parse
    /// them while this thread applies the parsed cuts strictly in order, so
    /// applying batch N overlaps parsing batches N+1 and later.
    fn parse_and_apply(
        &self,
        bytes: &[u8],
        from: i64,
        cuts: &[Cut],
        next_of: impl Fn(&Cut) -> i64,
    ) -> Result<usize, StoreError> {
        let taken = AtomicUsize::new(0);
        let abandon = AtomicBool::new(false);
        let (senders, receivers): (Vec<_>, Vec<_>) = cuts.iter().map(|_| sync_channel(1)).unzip();
        std::thread::scope(|s| {
            for _ in 0..self.parse_workers.min(cuts.len()) {
                let (taken, abandon, senders) = (&taken, &abandon, &senders);
                s.spawn(move || loop {
                    let i = taken.fetch_add(1, Ordering::Relaxed);
                    if i >= cuts.len() || abandon.load(Ordering::Relaxed) {
                        break;
                    }
                    let parsed =
                        catch_unwind(AssertUnwindSafe(|| self.parse_cut(bytes, from, cuts[i])))
                            .unwrap_or_else(|_| {
                                Err(corrupt(from, "a reput parser panicked".into()))
                            });
                    // The receiver is gone only when applying stopped.
                    let _ = senders[i].send(parsed);
                });
            }
            let mut total = 0;
            for (cut, rx) in cuts.iter().zip(&receivers) {
                let applied = rx
                    .recv()
                    .unwrap_or_else(|_| Err(corrupt(from, "a reput parser stopped".into())))
                    .and_then(|requests| {
                        self.apply(&requests, from + cut.start as i64, next_of(cut))?;
                        Ok(requests.len())
                    });
                match applied {
                    Ok(n) => total += n,
                    Err(e) => {
                        abandon.store(true, Ordering::Relaxed);
                        return Err(e);
                    }
                }
            }
            Ok(total)
        })
    }

    /// Cuts up to [`CUTS_PER_WORKER`] batches per parser (one for the
    /// serial reput) of at most
    /// [`MAX_RECORDS_PER_PASS`] records; also returns where the next pass
    /// starts when a segment's blank end was reached.
    fn cut(
        &self,
        bytes: &[u8],
        from: i64,
        clipped: bool,
    ) -> Result<(Vec<Cut>, Option<i64>), StoreError> {
        let most = if self.parse_workers == 1 {
            1
        } else {
            self.parse_workers * CUTS_PER_WORKER
        };
        let mut cuts = Vec::with_capacity(most);
        let mut pos = 0usize;
        while cuts.len() < most {
            let start = pos;
            let mut records = 0;
            let mut stop = false;
            while records < MAX_RECORDS_PER_PASS && pos + 8 <= bytes.len() {
                let at = from + pos as i64;
                match peek_frame(&bytes[pos..]).map_err(|e| corrupt(at, e.to_string()))? {
                    Frame::Message { total_size } => {
                        if pos + total_size > bytes.len()
                            && (clipped
                                || self.partial_tail.load(std::sync::atomic::Ordering::Acquire))
                        {
                            // The rest of it has not been replicated (or
                            // confirmed) yet.
                            stop = true;
                            break;
                        }
                        if total_size == 0 || pos + total_size > bytes.len() {
                            return Err(corrupt(
                                at,
                                format!("record of {total_size} bytes runs past the written data"),
                            ));
                        }
                        pos += total_size;
                        records += 1;
                    }
                    Frame::Blank { .. } => {
                        if pos > start {
                            cuts.push(Cut { start, end: pos });
                        }
                        return Ok((cuts, Some(self.commit_log.roll_next(at))));
                    }
                    Frame::Empty => {
                        stop = true;
                        break;
                    }
                }
            }
            if pos > start {
                cuts.push(Cut { start, end: pos });
            }
            if stop || records < MAX_RECORDS_PER_PASS {
                break;
            }
        }
        Ok((cuts, None))
    }

    fn parse_cut(
        &self,
        bytes: &[u8],
        from: i64,
        cut: Cut,
    ) -> Result<Vec<DispatchRequest>, StoreError> {
        let mut out = Vec::with_capacity(MAX_RECORDS_PER_PASS);
        let mut pos = cut.start;
        while pos < cut.end {
            let request = self.request_at(&bytes[pos..cut.end], from + pos as i64)?;
            pos += usize::try_from(request.msg_size).unwrap_or(0).max(1);
            out.push(request);
        }
        Ok(out)
    }
}
