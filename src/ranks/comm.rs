//! The communicator: the few MPI operations the ranks use, over rsmpi's world communicator.
//!
//! Field values travel as bytes (f32 and f64 are plain data), so the exchange is generic over
//! the precision without MPI datatypes per type. Message tags keep the streams apart: halo
//! planes carry [`HALO_TAG`] plus the copy's index, everything rank 0 collects (probe values,
//! snapshot parts, flux planes, statuses) [`DATA_TAG`]; between two ranks, messages of one tag
//! arrive in the order they were sent, which is what keeps every collection in step.

use mpi::collective::SystemOperation;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;

/// The tag of what rank 0 collects from the others.
pub(crate) const DATA_TAG: i32 = 1;
/// The tag of the messages of a scan over ranks (the run's task farm): finished traces to rank 0,
/// its orders back.
pub(crate) const SCAN_TAG: i32 = 2;
/// The tag of the surface ports' first trade between ranks (the increments; plus one: the
/// ports' outputs), `crate::ranks::port_links`.
pub(crate) const PORT_TAG: i32 = 3;
/// The first tag of halo planes (plus the copy's index in its half step's list, plus
/// [`HALF_TAGS`] for the E half step).
pub(crate) const HALO_TAG: i32 = 1000;
/// The largest message [`World::send`] sends (1 GiB): larger data goes in several.
pub(crate) const MESSAGE_BYTES: usize = 1 << 30;
/// Tags kept for one half step's halo copies.
pub(crate) const HALF_TAGS: i32 = 100_000;

/// The world communicator of an initialised MPI environment.
pub(crate) struct World {
    comm: SimpleCommunicator,
}

impl World {
    /// The world, if [`super::init`] started MPI (and it is still running).
    pub(crate) fn get() -> Option<World> {
        (mpi::is_initialized() && !mpi::is_finalized()).then(|| World {
            comm: SimpleCommunicator::world(),
        })
    }

    /// This process's rank.
    pub(crate) fn rank(&self) -> usize {
        self.comm.rank() as usize
    }

    /// Processes in the world.
    pub(crate) fn size(&self) -> usize {
        self.comm.size() as usize
    }

    /// Broadcast `buf` from rank 0 (collective).
    pub(crate) fn broadcast<T: Copy>(&self, buf: &mut [T]) {
        self.comm.process_at_rank(0).broadcast_into(bytes_mut(buf));
    }

    /// Send `data` to rank `to` (blocking until the buffer may be reused), in messages of at
    /// most [`MESSAGE_BYTES`] (an MPI count is a 32-bit integer; a rank's part of a field can
    /// be larger).
    pub(crate) fn send<T: Copy>(&self, to: usize, data: &[T]) {
        let all = bytes(data);
        let mut chunks = all.chunks(MESSAGE_BYTES);
        // An empty part is still one (empty) message, so both sides count the same.
        let first = chunks.next().unwrap_or(&[]);
        let process = self.comm.process_at_rank(to as i32);
        process.send_with_tag(first, DATA_TAG);
        for c in chunks {
            process.send_with_tag(c, DATA_TAG);
        }
    }

    /// Receive exactly `out.len()` values from rank `from` (as [`World::send`] sent them).
    pub(crate) fn receive<T: Copy>(&self, from: usize, out: &mut [T]) {
        let all = bytes_mut(out);
        let process = self.comm.process_at_rank(from as i32);
        if all.is_empty() {
            process.receive_into_with_tag(all, DATA_TAG);
            return;
        }
        for c in all.chunks_mut(MESSAGE_BYTES) {
            process.receive_into_with_tag(c, DATA_TAG);
        }
    }

    /// Send the bytes `data` to rank `to` as one message with `tag` (blocking until the buffer
    /// may be reused): for messages of their own size (at most [`MESSAGE_BYTES`]), received
    /// with [`World::take_waiting`].
    pub(crate) fn post(&self, to: usize, tag: i32, data: &[u8]) {
        assert!(data.len() <= MESSAGE_BYTES, "one message of at most 1 GiB");
        self.comm
            .process_at_rank(to as i32)
            .send_with_tag(data, tag);
    }

    /// The next message with `tag` that has arrived from any rank, received: its sender and
    /// bytes; None when none is waiting (it does not wait).
    pub(crate) fn take_waiting(&self, tag: i32) -> Option<(usize, Vec<u8>)> {
        let (message, status) = self
            .comm
            .any_process()
            .immediate_matched_probe_with_tag(tag)?;
        let mut data = vec![0u8; status.count(u8::equivalent_datatype()) as usize];
        message.matched_receive_into(&mut data[..]);
        Some((status.source_rank() as usize, data))
    }

    /// True on every rank if `value` is true on every rank (collective).
    pub(crate) fn all(&self, value: bool) -> bool {
        let mine = value as u8;
        let mut all = 0u8;
        self.comm
            .all_reduce_into(&mine, &mut all, SystemOperation::logical_and());
        all != 0
    }

    /// Every rank's `text`, in rank order, on every rank (collective).
    pub(crate) fn gather_strings(&self, text: &str) -> Vec<String> {
        let size = self.size();
        let mine = text.len() as u64;
        let mut lens = vec![0u64; size];
        self.comm.all_gather_into(&mine, &mut lens[..]);
        let longest = lens.iter().copied().max().unwrap_or(0) as usize;
        if longest == 0 {
            // Every text empty (chunks of an empty buffer would yield no entry at all).
            return vec![String::new(); size];
        }
        let mut padded = text.as_bytes().to_vec();
        padded.resize(longest, 0);
        let mut all = vec![0u8; longest * size];
        self.comm.all_gather_into(&padded[..], &mut all[..]);
        all.chunks(longest.max(1))
            .zip(&lens)
            .map(|(c, &n)| String::from_utf8_lossy(&c[..n as usize]).into_owned())
            .collect()
    }

    /// Run `f` with the scope of non-blocking requests (sends and receives of halo planes):
    /// every request started in it must be waited for before it ends.
    pub(crate) fn exchange<'a, R>(
        &self,
        f: impl FnOnce(&SimpleCommunicator, &mpi::request::LocalScope<'a>) -> R,
    ) -> R {
        mpi::request::scope(|scope| f(&self.comm, scope))
    }
}

/// Plain float (or integer) values as bytes.
pub(crate) fn bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: the values are plain data with no padding (f32, f64, u64); any byte view of them
    // is valid and has their size.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}

/// Plain float (or integer) values as writable bytes.
pub(crate) fn bytes_mut<T: Copy>(v: &mut [T]) -> &mut [u8] {
    // SAFETY: as `bytes`; every bit pattern is a valid f32, f64 or u64, so writing any bytes
    // leaves valid values.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
}
