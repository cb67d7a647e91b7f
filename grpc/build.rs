//! Compiles `proto/apache/rocketmq/v2/*.proto` into Rust in `OUT_DIR`.
//!
//! `protox` parses the protos in pure Rust (no `protoc` on the machine; the
//! `google/protobuf` imports are built into it), and `tonic-prost-build`
//! generates the messages, the `MessagingService` server and its client.

use std::error::Error;

const PROTO_DIR: &str = "proto";
const PROTOS: [&str; 2] = [
    "proto/apache/rocketmq/v2/definition.proto",
    "proto/apache/rocketmq/v2/service.proto",
];

fn main() -> Result<(), Box<dyn Error>> {
    println!("cargo:rerun-if-changed={PROTO_DIR}");
    for proto in PROTOS {
        println!("cargo:rerun-if-changed={proto}");
    }
    let descriptors = protox::compile(PROTOS, [PROTO_DIR])?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .emit_rerun_if_changed(false)
        // A message body is a `Bytes`: decoding slices it out of the
        // request's buffer and the broker hands it on without a copy.
        .bytes(".apache.rocketmq.v2.Message.body")
        // Smaller per-call buffers than tonic's 8 KiB (src/codec.rs).
        .codec_path("crate::codec::SmallBufferCodec")
        .compile_fds(descriptors)?;
    Ok(())
}
