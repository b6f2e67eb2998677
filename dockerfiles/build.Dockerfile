# Build image for rockbuild jobs: compilers, compiler caches, git and Python. The ROCm SDK is
# not baked in: `rockbuild build --install-rocm` installs it from the package index into a venv,
# so one image serves every SDK version and GPU family.
#
#   docker build -f dockerfiles/build.Dockerfile -t rockbuild-build .
#   docker run --rm -v "$PWD/work:/work" rockbuild-build rockbuild checkout --root-checkout-dir /work/src

FROM rust:1.95-bookworm AS rockbuild
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY configs ./configs
RUN cargo build --release --locked

FROM debian:12-slim
# Build tools the PyTorch stack expects (CMake and Ninja come from pip per project).
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        build-essential ca-certificates ccache git patchelf python3 python3-dev python3-venv sccache \
    && rm -rf /var/lib/apt/lists/*
COPY --from=rockbuild /src/target/release/rockbuild /usr/local/bin/rockbuild
# Checkouts are bind-mounted and owned by the host user.
RUN git config --system --add safe.directory '*'
ENV NO_COLOR=1
WORKDIR /work
ENTRYPOINT []
CMD ["rockbuild", "--help"]
