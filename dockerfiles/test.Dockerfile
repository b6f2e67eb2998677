# Test image for GPU runners: Python and rockbuild, nothing else. `rockbuild smoke` creates a
# fresh venv and installs the staged set (and the ROCm SDK it pins) from the index.
#
#   docker build -f dockerfiles/test.Dockerfile -t rockbuild-test .
#   docker run --rm --device /dev/kfd --device /dev/dri --group-add video rockbuild-test \
#     rockbuild smoke --index-url https://…/staging/gfx110X-all/ --extra-index-url https://…/rocm/

FROM rust:1.95-bookworm AS rockbuild
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY configs ./configs
RUN cargo build --release --locked

FROM ubuntu:24.04
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        ca-certificates python3 python3-venv \
    && rm -rf /var/lib/apt/lists/*
COPY --from=rockbuild /src/target/release/rockbuild /usr/local/bin/rockbuild
ENV NO_COLOR=1
WORKDIR /work
CMD ["rockbuild", "--help"]
