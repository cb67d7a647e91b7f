//! A reput pass in batches. One reader cuts the readable CommitLog into
//! contiguous batches by hopping record sizes (cheap), up to one batch per
//! parser; the parsers decode their batches (the expensive part: properties,
//! keys, tags), in parallel when there are several; then the batches are
//! applied strictly in log order, so every queue sees its units in order.
//! With one parser (the default) this is the serial reput; with
//! `enableBuildConsumeQueueConcurrently` (as in RocketMQ 5.x) it is the
//! concurrent one, and both build the same consume queues.

use rmq_common::message::record::{peek_frame, Frame};
use rmq_common::DispatchRequest;
use rmq_store_file::StoreError;

use super::{corrupt, Dispatcher, Pass, MAX_RECORDS_PER_PASS};

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
        let (cuts, segment_end) = self.cut(bytes, from)?;
        let end_of_cuts = cuts.last().map_or(0, |c| c.end);
        let parsed: Vec<Result<Vec<DispatchRequest>, StoreError>> = if cuts.len() == 1 {
            vec![self.parse_cut(bytes, from, cuts[0])]
        } else {
            std::thread::scope(|s| {
                let handles: Vec<_> = cuts
                    .iter()
                    .map(|&cut| s.spawn(move || self.parse_cut(bytes, from, cut)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(corrupt(from, "a reput parser panicked".into()))
                        })
                    })
                    .collect()
            })
        };
        let mut total = 0;
        for (cut, requests) in cuts.iter().zip(parsed) {
            let requests = requests?;
            let last = cut.end == end_of_cuts;
            let next = match (last, segment_end) {
                (true, Some(next)) => next,
                _ => from + cut.end as i64,
            };
            self.apply(&requests, next)?;
            total += requests.len();
        }
        if cuts.is_empty() {
            match segment_end {
                Some(next) if next != from => self.apply(&[], next)?,
                _ => return Ok(Pass::Idle),
            }
        }
        Ok(Pass::Progress(total))
    }

    /// Cuts up to `parse_workers` batches of at most
    /// [`MAX_RECORDS_PER_PASS`] records; also returns where the next pass
    /// starts when a segment's blank end was reached.
    fn cut(&self, bytes: &[u8], from: i64) -> Result<(Vec<Cut>, Option<i64>), StoreError> {
        let mut cuts = Vec::with_capacity(self.parse_workers);
        let mut pos = 0usize;
        while cuts.len() < self.parse_workers {
            let start = pos;
            let mut records = 0;
            let mut stop = false;
            while records < MAX_RECORDS_PER_PASS && pos + 8 <= bytes.len() {
                let at = from + pos as i64;
                match peek_frame(&bytes[pos..]).map_err(|e| corrupt(at, e.to_string()))? {
                    Frame::Message { total_size } => {
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
