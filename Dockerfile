# The operator image for teams that build with Docker (or BuildKit, Podman,
# Kaniko). It is the image `make image` builds without Docker (hack/image):
# the same static binary on an empty base, the same files, user, entrypoint
# and OCI labels; hack/image's TestDockerfileMatches keeps the two in step.
#
#   docker build -t ghcr.io/datapilot/datapilot:0.1.0 \
#     --build-arg VERSION=0.1.0 --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg CREATED=$(date -u -d @$(git log -1 --format=%ct) +%Y-%m-%dT%H:%M:%SZ) .
ARG GO_VERSION=1.26
FROM golang:${GO_VERSION} AS build
ARG VERSION=dev
ARG REVISION=unknown
ARG TARGETOS=linux
ARG TARGETARCH=amd64
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY config/ config/
COPY internal/ internal/
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath \
      -ldflags "-s -w -X github.com/datapilot/datapilot/internal/buildinfo.version=${VERSION} -X github.com/datapilot/datapilot/internal/buildinfo.revision=${REVISION}" \
      -o /out/datapilot ./cmd/datapilot \
 && mkdir -p /out/tmp && chmod 1777 /out/tmp
COPY hack/image/rootfs/etc/ /out/etc/

FROM scratch
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z
COPY --from=build /out/ /
LABEL org.opencontainers.image.title="datapilot" \
      org.opencontainers.image.description="Datapilot, the Kubernetes operator that runs Apache Flink clusters from FlinkCluster resources" \
      org.opencontainers.image.source="https://github.com/datapilot/datapilot" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
ENV PATH=/
WORKDIR /
USER 65532:65532
ENTRYPOINT ["/datapilot"]
CMD ["operator"]
