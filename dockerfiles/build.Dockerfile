# Build image of rockbuild's CI: manylinux_2_28 (AlmaLinux 8, glibc 2.28), so every wheel built
# here needs at most GLIBC_2.28 and can carry the manylinux_2_28 tag (`rockbuild verify` checks
# the tag against the glibc symbol versions each library needs). On top of the base:
# scripts/image-setup build (the only set-up step; the tests run it too) and rockbuild itself.
# The ROCm SDK is not baked in: `rockbuild build --install-rocm` installs it from the package
# index, so one image serves every SDK version and GPU family. hipcc comes with the SDK wheels.
#
#   docker build -f dockerfiles/build.Dockerfile -t rockbuild-build .
#
# The base is pinned by digest (the same one TheRock's build_manylinux_x86_64.Dockerfile pins);
# docs/ci.md says how to move it.

# rockbuild as a static (musl) binary, so it runs on any glibc, the base's 2.28 included.
FROM rust:1.95-alpine AS rockbuild
RUN apk add --no-cache build-base cmake perl
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY configs ./configs
RUN cargo build --release --locked

FROM quay.io/pypa/manylinux_2_28_x86_64@sha256:d632b5e68ab39e59e128dcf0e59e438b26f122d7f2d45f3eea69ffd2877ab017
# Every CPython the release table (configs/releases.yaml) builds; a test keeps the two equal.
ARG PYTHONS="3.10 3.11 3.12 3.13 3.14"
COPY scripts/image-setup /opt/rockbuild-setup/scripts/image-setup
COPY dockerfiles/build-tools.txt /opt/rockbuild-setup/dockerfiles/build-tools.txt
RUN /opt/rockbuild-setup/scripts/image-setup build --pythons "$PYTHONS"
COPY --from=rockbuild /src/target/release/rockbuild /usr/local/bin/rockbuild
ENV NO_COLOR=1
WORKDIR /work
CMD ["rockbuild", "--help"]
