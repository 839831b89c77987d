# syntax=docker/dockerfile:1

# Build stage. It runs on the build host's platform and cross-compiles for the
# target platform, so a multi-arch build needs no emulation.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS
ARG TARGETARCH
ENV GOOS=$TARGETOS GOARCH=$TARGETARCH
WORKDIR /src
COPY . .
ARG VERSION=dev
# scripts/docker-build-cmd.sh runs this same go build command outside Docker;
# deploy/dockerfile_test.go fails when the two drift apart.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/lock-reaper .

# Final stage: a static binary on distroless, as the nonroot user. Nothing is
# written to the filesystem at run time, so a read-only root filesystem works.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
LABEL org.opencontainers.image.title="lock-reaper" \
      org.opencontainers.image.description="Releases stale Pulp task/resource locks in Redis and cancels lost tasks in PostgreSQL" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/lock-reaper /lock-reaper
USER 65532:65532
EXPOSE 9090
ENTRYPOINT ["/lock-reaper"]
CMD ["once"]
