//! Compiles the service's `.proto` files with protox (a protobuf compiler
//! in Rust), so building needs no system `protoc`: the assembly API the
//! service serves, and the stores it calls (written by `ctxpack-codegen`
//! from the WIT). The stores' descriptors are kept too: the service reads
//! their messages through them (`src/protojson.rs`).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "proto/ctxpack/assembly/v1/context_assembly.proto",
        "proto/ctxpack/stores/v1/stores.proto",
    ];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let files = protox::compile(protos, ["proto"])?;
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out.join("descriptors.bin"),
        prost::Message::encode_to_vec(&files),
    )?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(files)?;
    Ok(())
}
