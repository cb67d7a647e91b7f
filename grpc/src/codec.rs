//! The codec every generated server and client uses: prost's, with smaller
//! starting buffers. tonic gives each call an encode and a decode buffer of
//! 8 KiB to start with, and a long-lived stream keeps both for its life: a
//! 5.x client's Telemetry stream is open as long as the client runs, so
//! 10,000 idle clients held 160 MB in them. Here they start at
//! [`BUFFER_BYTES`] and grow as a message needs (as tonic's do past 8 KiB).

use std::marker::PhantomData;

use prost::Message;
use tonic::codec::{BufferSettings, Codec};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// Starting size of a call's encode and decode buffers.
pub const BUFFER_BYTES: usize = 256;
/// Encoded bytes a streaming response gathers before it yields (tonic's
/// default).
const YIELD_THRESHOLD: usize = 32 * 1024;

/// prost encoding with [`BUFFER_BYTES`] starting buffers.
#[derive(Debug, Clone)]
pub struct SmallBufferCodec<T, U> {
    _pd: PhantomData<(T, U)>,
}

impl<T, U> Default for SmallBufferCodec<T, U> {
    fn default() -> Self {
        Self { _pd: PhantomData }
    }
}

fn settings() -> BufferSettings {
    BufferSettings::new(BUFFER_BYTES, YIELD_THRESHOLD)
}

impl<T, U> Codec for SmallBufferCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = ProstDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::raw_encoder(settings())
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstCodec::<T, U>::raw_decoder(settings())
    }
}
