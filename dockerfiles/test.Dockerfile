# Test image for the GPU runners: the same manylinux_2_28 base as the build image, so the wheels
# are tested on the oldest glibc their tag claims and with every CPython the release table
# builds (`rockbuild smoke` and `rockbuild test` create a fresh venv from /opt/python/<cpXY>).
# No ROCm here: the GPU driver is the host's (/dev/kfd, /dev/dri passed in by the job), the
# ROCm user space comes with the SDK wheels the staged set pins.
#
#   docker build -f dockerfiles/test.Dockerfile -t rockbuild-test .
#   docker run --rm --device /dev/kfd --device /dev/dri --group-add video rockbuild-test \
#     rockbuild smoke --index-url https://…/staging/gfx110X-all/ --extra-index-url https://…/rocm/

FROM rust:1.95-alpine AS rockbuild
RUN apk add --no-cache build-base cmake perl
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY configs ./configs
RUN cargo build --release --locked

FROM quay.io/pypa/manylinux_2_28_x86_64@sha256:d632b5e68ab39e59e128dcf0e59e438b26f122d7f2d45f3eea69ffd2877ab017
ARG PYTHONS="3.10 3.11 3.12 3.13 3.14"
COPY scripts/image-setup /opt/rockbuild-setup/scripts/image-setup
RUN /opt/rockbuild-setup/scripts/image-setup test --pythons "$PYTHONS"
COPY --from=rockbuild /src/target/release/rockbuild /usr/local/bin/rockbuild
ENV NO_COLOR=1
WORKDIR /work
CMD ["rockbuild", "--help"]
