# Datapilot. The README's two commands are `make run` and `make test`.
SHELL := /usr/bin/env bash -o pipefail
BIN := $(CURDIR)/bin
export PATH := $(BIN):$(PATH)
GO ?= go
GOTEST ?= $(GO) test

.PHONY: all tools generate manifests verify-generated build test test-unit test-integration test-e2e test-chaos test-faults bench-chaos run bench

all: build

## tools: build the pinned control plane and generators into bin/ (skips what is up to date)
tools:
	@hack/tools/build.sh
	@hack/tools/crd-ref-docs/build.sh
	@hack/tools/prometheus/build.sh

## generate: deepcopy and CRD/RBAC manifests from the API markers
generate: tools
	$(BIN)/controller-gen object paths=./api/...
	$(BIN)/controller-gen crd rbac:roleName=datapilot-manager paths=./api/... paths=./internal/... output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	$(GO) run ./hack/crdtrim config/crd/bases/data.example.com_flinkclusters.yaml
	hack/sync-chart.sh
	hack/api-docs/generate.sh

manifests: generate

## verify-generated: fail when generated files are stale
verify-generated: generate
	@git diff --exit-code -- api config/crd/bases config/rbac/role.yaml charts/datapilot/crds charts/datapilot/files/role.yaml docs/api.md docs/api-v1alpha1.md || { echo "Generated files are stale: run 'make generate' and commit the result."; exit 1; }

## build: bin/datapilot (the production binary the image ships) and bin/datapilot-local
## (the development binary: local platform and Flink REST simulator), version-stamped
VERSION ?= $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$$/\1/p' charts/datapilot/Chart.yaml)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X github.com/datapilot/datapilot/internal/buildinfo.version=$(VERSION) -X github.com/datapilot/datapilot/internal/buildinfo.revision=$(REVISION)
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/datapilot ./cmd/datapilot
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/datapilot-local ./cmd/datapilot-local

## image: the operator image, built without Docker (hack/image, go-containerregistry): a static
## bin/datapilot on an empty base, non-root, tagged $(IMAGE):$(IMAGE_TAG). Writes the docker-archive
## dist/datapilot-image.tar and the OCI layout dist/datapilot-oci/; image-push sends it to $(IMAGE).
IMAGE ?= ghcr.io/datapilot/datapilot
IMAGE_TAG ?= $(VERSION)
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
IMAGE_CREATED ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE_ARGS = --binary $(CURDIR)/dist/linux-$(IMAGE_ARCH)/datapilot --rootfs $(CURDIR)/hack/image/rootfs --platform linux/$(IMAGE_ARCH) \
	--version $(VERSION) --revision $(REVISION) --created $(IMAGE_CREATED) --tag $(IMAGE):$(IMAGE_TAG)
.PHONY: image image-push test-image
image:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o dist/linux-$(IMAGE_ARCH)/datapilot ./cmd/datapilot
	cd hack/image && $(GO) run . $(IMAGE_ARGS) --archive $(CURDIR)/dist/datapilot-image.tar --oci $(CURDIR)/dist/datapilot-oci

image-push: image
	cd hack/image && $(GO) run . $(IMAGE_ARGS) --push $(IMAGE):$(IMAGE_TAG)

## test-image: build the image in a test and inspect it (hack/image is a module of its own)
test-image:
	cd hack/image && $(GOTEST) -count=1 -timeout 10m ./...

## bench: the scale benchmark (not part of make test): interleaved rounds (-rounds 3), every child shape
## and the sharded mode; N=1000 with `make bench BENCH_N=1000` (docs/performance-shape.md)
BENCH_N ?= 100
bench: tools build
	$(GO) run ./bench -n $(BENCH_N)
	$(GO) run ./bench/autopilotrest
	$(GO) run ./bench/autopilot

## test-unit: unit tests (the bench's own included) and the integration tier (envtest: real kube-apiserver and etcd from bin/)
export KUBEBUILDER_ASSETS := $(BIN)
test-unit:
	$(GOTEST) -count=1 -timeout 15m $$($(GO) list ./... | grep -v -e /test/e2e -e /test/chaos -e /test/faults)

## test-e2e: the local platform, the Flink REST simulator and the operator binary. Its tests
## mostly wait on scaled Flink and Kubernetes timers, so more of them run at once than CPUs.
## One test binary, two processes side by side, each on a platform of its own: the tests that
## kill or restart the operator or count pods per node (alone(t), one at a time) and the rest
## (parallel(t)). E2E_FLAGS passes more flags to both (E2E_FLAGS=-test.v).
E2E_PARALLEL ?= 8
E2E_FLAGS ?=
E2E_BIN := $(BIN)/e2e.test
E2E_ALONE = cd test/e2e && $(E2E_BIN) -test.timeout 20m -e2e.group=alone $(E2E_FLAGS)
E2E_REST = cd test/e2e && $(E2E_BIN) -test.timeout 20m -test.parallel $(E2E_PARALLEL) -e2e.group=parallel $(E2E_FLAGS)
.PHONY: e2e-bin
e2e-bin: build
	$(GO) test -c -o $(E2E_BIN) ./test/e2e
test-e2e: e2e-bin
	@hack/side-by-side.sh "e2e, alone group" "$(E2E_ALONE)" "e2e, parallel group" "$(E2E_REST)"

## test-chaos: the control plane failing under load, on a platform of its own (small N)
CHAOS_N ?= 6
test-chaos: build
	$(GOTEST) -count=1 -timeout 20m ./test/chaos/... -args -chaos.n=$(CHAOS_N)

## test-faults: seeded fault schedules against one job cluster each (internal/faults), the state
## invariants judged from the simulator's record; a failing seed prints its schedule and replays
## with `go test ./test/faults -run TestFaultSchedules -count=1 -args -faults.seed=N`
FAULTS_SEEDS ?= 3
FAULTS_FIRST ?= 1
FAULTS_PARALLEL ?= 1
test-faults: build
	$(GOTEST) -count=1 -timeout $(FAULTS_TIMEOUT) ./test/faults/... -run TestFaultSchedules \
		-args -faults.seeds=$(FAULTS_SEEDS) -faults.first=$(FAULTS_FIRST) -faults.parallel=$(FAULTS_PARALLEL)
FAULTS_TIMEOUT ?= 20m

## bench-chaos: the chaos tier at scale, `make bench-chaos CHAOS_N=100`, then hundreds of fault
## schedules (`FAULTS_SEEDS=500`), several at once; every failing seed is printed at the end
bench-chaos: CHAOS_N = 50
bench-chaos: FAULTS_SEEDS = 200
bench-chaos: FAULTS_PARALLEL = 4
bench-chaos: FAULTS_TIMEOUT = 6h
bench-chaos: test-chaos
	@$(MAKE) --no-print-directory test-faults FAULTS_SEEDS=$(FAULTS_SEEDS) FAULTS_PARALLEL=$(FAULTS_PARALLEL) FAULTS_TIMEOUT=$(FAULTS_TIMEOUT)

## run: the embedded local platform with Datapilot in it (Ctrl-C stops everything)
run: tools build
	$(BIN)/datapilot-local up

.PHONY: chart-lint kustomize-check

## chart-lint: lint the Helm chart and render it with default and non-default values
chart-lint:
	@test -x $(BIN)/helm || { echo "bin/helm is missing: run 'make tools'"; exit 1; }
	hack/sync-chart.sh --check
	$(BIN)/helm lint --strict charts/datapilot
	$(BIN)/helm lint --strict charts/datapilot --values test/deploy/testdata/values-custom.yaml
	$(BIN)/helm template datapilot charts/datapilot --namespace datapilot-system --include-crds >/dev/null
	$(BIN)/helm template flink-ops charts/datapilot --namespace flink-ops --values test/deploy/testdata/values-custom.yaml >/dev/null
	$(BIN)/helm template datapilot charts/datapilot --set serviceMonitor.enabled=true --set 'watchNamespace=team-a\,team-b' >/dev/null
	$(BIN)/helm template datapilot charts/datapilot --set prometheusRule.enabled=true --show-only templates/prometheusrule.yaml | grep -q 'controller_runtime_reconcile_time_seconds_bucket'

## kustomize-check: build every kustomization under config/
kustomize-check:
	@test -x $(BIN)/kubectl || { echo "bin/kubectl is missing: run 'make tools'"; exit 1; }
	@for d in $$(find config -name kustomization.yaml -exec dirname {} \; | sort); do \
		echo "kubectl kustomize $$d"; $(BIN)/kubectl kustomize $$d >/dev/null || exit 1; \
	done

.PHONY: flink-charts-check test-static fmt-check

## test-static: what make test checks besides the tests: the build, the Go sources' format, the
## Helm chart, the Flink environment charts and the kustomizations
test-static: build fmt-check chart-lint flink-charts-check kustomize-check

## fmt-check: every tracked Go file as gofmt prints it
fmt-check:
	@out=$$(git ls-files -z '*.go' | xargs -0 gofmt -l); \
	test -z "$$out" || { echo "gofmt -w these files:"; echo "$$out"; exit 1; }

## flink-charts-check: the Flink environment charts (charts/flink-*): vendored copies in step, helm dependency
## list at the pinned versions, version/appVersion/image tag/spec.version one Flink version (lint, goldens: test/flinkcharts)
flink-charts-check:
	@test -x $(BIN)/helm || { echo "bin/helm is missing: run 'make tools'"; exit 1; }
	$(GO) run ./hack/flinkcharts check

## test: every tier. The image test (a module of its own) and the static checks (the build,
## the charts, the kustomizations) run beside the unit and integration tier. Then the
## end-to-end tier's parallel group runs beside its alone group, which the chaos tier and the
## fault schedules (three seeds at once) follow, each on a platform of its own: the parallel
## group mostly waits on timers. Each prints its output whole when it ends.
test: tools verify-generated
	@$(MAKE) --no-print-directory -j3 --output-sync=target test-unit test-image test-static
	@$(MAKE) --no-print-directory e2e-bin
	@hack/side-by-side.sh "e2e, parallel group" "$(E2E_REST)" \
		"e2e, alone group, then the chaos tier and the fault schedules" \
		"($(E2E_ALONE)) && $(MAKE) --no-print-directory -j2 --output-sync=target test-chaos test-faults FAULTS_PARALLEL=3"
