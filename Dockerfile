# syntax=docker/dockerfile:1

# Base images are pinned by digest (the tag says what the image is, the digest
# which one): a rebuild gets the same bases until a reviewed commit bumps
# them with scripts/bump-base-images.sh. The digests are of the multi-arch
# indexes, so every platform resolves its own image. The Go tag is go.mod's
# go directive exactly (deploy/dockerfile_test.go checks it).

# Build stage. It runs on the build host's platform and cross-compiles for the
# target platform, so a multi-arch build needs no emulation.
FROM --platform=$BUILDPLATFORM golang:1.26.8-bookworm@sha256:dc9ad6c05acc7a88e5b71bde60a5fe3bd4b9f0db209011711b464107438a8107 AS build
ARG TARGETOS
ARG TARGETARCH
ENV GOOS=$TARGETOS GOARCH=$TARGETARCH
WORKDIR /src
COPY . .
ARG VERSION=dev
# The build context has no .git (.dockerignore), so Go records no commit:
# the commit and the build date come in as build arguments, for
# `lock-reaper version` and for the labels below.
ARG REVISION=unknown
ARG BUILD_DATE=unknown
# scripts/docker-build-cmd.sh runs this same go build command outside Docker;
# deploy/dockerfile_test.go fails when the two drift apart.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION} -X main.buildDate=${BUILD_DATE}" -o /out/lock-reaper .

# Final stage: a static binary on distroless, as the nonroot user. Nothing is
# written to the filesystem at run time, so a read-only root filesystem works.
FROM gcr.io/distroless/static-debian12:nonroot@sha256:d093aa3e30dbadd3efe1310db061a14da60299baff8450a17fe0ccc514a16639
# The OCI labels say where an image came from, so that an image copied into
# a private registry still names its source, version and commit:
# scripts/build-push-image.sh and the release workflow pass VERSION, REVISION
# (git rev-parse HEAD) and BUILD_DATE (RFC 3339, UTC), as to the build stage.
ARG VERSION=dev
ARG REVISION=unknown
ARG BUILD_DATE=unknown
ARG SOURCE=https://github.com/lock-reaper/lock-reaper
LABEL org.opencontainers.image.title="lock-reaper" \
      org.opencontainers.image.description="Releases stale Pulp task/resource locks in Redis and cancels lost tasks in PostgreSQL" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${BUILD_DATE}"
COPY --from=build /out/lock-reaper /lock-reaper
USER 65532:65532
EXPOSE 9090
ENTRYPOINT ["/lock-reaper"]
CMD ["once"]
