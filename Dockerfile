# steerd in a container: build on Debian 12, run on Debian 12 slim as a non-root user.
#
#   docker build -t steerd .
#   docker run --rm -p 7777:7777/udp -p 7780:7780 -e STEERD_SECRET=... steerd   (0.0.0.0 needs a secret,
#   docker run --rm -e STEERD_SECRET=... steerd token --name alice       or STEERD_INSECURE=1)
#
# Where no registry is reachable, make a base locally and pass it in, e.g.
#   debootstrap --variant=minbase bookworm /tmp/rootfs && tar -C /tmp/rootfs -c . | podman import - bookworm-local
#   buildah bud --format docker --isolation=chroot --build-arg BASE=bookworm-local --build-arg RUNTIME_BASE=bookworm-local -t steerd .
# (--format docker: the OCI image format has no HEALTHCHECK, and buildah would drop it.)
# and where no container runtime works either (buildah run ignores ENTRYPOINT and shares the host's network):
#   buildah run --isolation=chroot "$(buildah from steerd)" -- /usr/local/bin/steerd --port 7777
ARG BASE=debian:bookworm
ARG RUNTIME_BASE=debian:bookworm-slim

FROM ${BASE} AS build
WORKDIR /src
# The same set-up script as the README, limited to what a build needs.
COPY scripts/setup.sh scripts/setup.sh
RUN ./scripts/setup.sh --build-only
COPY . .
# Build outside the copied tree, so a host build/ (were .dockerignore not honoured) cannot interfere.
# Stripped: the debug information is most of each binary's size.
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null \
 && cmake --build /build -j"$(nproc)" --target steerd steerd-client steerd-demo \
 && strip --strip-unneeded /build/server/steerd /build/server/steerd-demo /build/client-sample/steerd-client

FROM ${RUNTIME_BASE} AS runtime
# apt-get clean and the removals drop apt's ~80 MB of lists and caches (a debootstrap base ships
# them), the documentation and the translations; deleting files in a layer does not shrink the
# layers below it, so the result is copied into an empty image in one layer (below).
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libuv1 libenet7 libmsgpackc2 libsodium23 \
      libwebsockets17 libwebsockets-evlib-uv libjansson4 \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/cache/debconf/*-old /var/log/apt/* /var/log/dpkg.log \
      /usr/share/doc/* /usr/share/man/* /usr/share/info/* /usr/share/locale/* /usr/share/lintian \
 && useradd --uid 10001 --user-group --no-log-init --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin steerd \
 && mkdir -p /var/lib/steerd && chown steerd:steerd /var/lib/steerd
COPY --from=build /build/server/steerd /build/server/steerd-demo /build/client-sample/steerd-client /usr/local/bin/

# The same Debian files, one layer: about 90 MB instead of 210 MB.
FROM scratch
COPY --from=runtime / /
USER steerd
# The world is checkpointed into the volume and restored when the container starts again; the
# volume must be writable by this image's user (uid 10001), or /readyz fails and
# steerd_checkpoints_failed_total grows. HTTP (metrics, health, the live view) on 7780/tcp.
ENV STEERD_BIND=0.0.0.0 \
    STEERD_PORT=7777 \
    STEERD_HTTP_BIND=0.0.0.0 \
    STEERD_HTTP_PORT=7780 \
    STEERD_STATE=/var/lib/steerd/world.state
VOLUME /var/lib/steerd
EXPOSE 7777/udp 7780/tcp
# Liveness, without curl: GET /healthz on 127.0.0.1:$STEERD_HTTP_PORT, exit 0 or 1.
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 CMD ["/usr/local/bin/steerd", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/steerd"]
