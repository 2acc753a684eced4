//! The surface ports' trades between ranks ([`crate::backend::ports::PortLinks`]): a port's
//! stencil, and the ports an edge gathers, reach one plane across a rank boundary, so twice an
//! E half step each rank sends its neighbours the values their ports read (the increments of
//! its boundary edges, then the outputs of its boundary ports) and receives theirs. Both ends
//! derive what travels from the model ([`crate::model::PortCrossings`]), so no sizes are sent.

use super::comm::{bytes, bytes_mut, World, MESSAGE_BYTES, PORT_TAG};
use crate::backend::ports::PortLinks;
use crate::decomp::ranks::RankLayout;
use mpi::traits::*;

/// The trades of one rank's ports with the ranks beside it, over MPI.
pub(crate) struct MpiPortLinks {
    layout: RankLayout,
}

impl MpiPortLinks {
    /// The links of the rank `layout` describes.
    pub(crate) fn new(layout: RankLayout) -> Self {
        MpiPortLinks { layout }
    }
}

impl<T: Copy> PortLinks<T> for MpiPortLinks {
    fn part_of_x(&self, x: usize) -> usize {
        self.layout.owner_of_x(x)
    }

    fn trade(&mut self, phase: usize, sends: &[(usize, &[T])], receives: &mut [(usize, &mut [T])]) {
        let world = World::get().expect("MPI runs while the ranks step");
        let tag = PORT_TAG + phase as i32;
        world.exchange(|comm, scope| {
            let mut pending = Vec::with_capacity(sends.len() + receives.len());
            for (part, values) in receives.iter_mut() {
                let data = bytes_mut(values);
                assert!(
                    data.len() <= MESSAGE_BYTES,
                    "a plane's ports fit one message"
                );
                pending.push(
                    comm.process_at_rank(*part as i32)
                        .immediate_receive_into_with_tag(scope, data, tag),
                );
            }
            for (part, values) in sends {
                let data = bytes(values);
                assert!(
                    data.len() <= MESSAGE_BYTES,
                    "a plane's ports fit one message"
                );
                pending.push(
                    comm.process_at_rank(*part as i32)
                        .immediate_send_with_tag(scope, data, tag),
                );
            }
            for request in pending {
                request.wait();
            }
        });
    }
}
