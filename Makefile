# Datapilot. The README's two commands are `make run` and `make test`.
SHELL := /usr/bin/env bash -o pipefail
BIN := $(CURDIR)/bin
export PATH := $(BIN):$(PATH)
GO ?= go
GOTEST ?= $(GO) test

.PHONY: all tools generate manifests verify-generated build test test-unit test-integration test-e2e test-chaos bench-chaos run bench

all: build

## tools: build the pinned control plane and generators into bin/ (skips what is up to date)
tools:
	@hack/tools/build.sh

## generate: deepcopy and CRD/RBAC manifests from the API markers
generate: tools
	$(BIN)/controller-gen object paths=./api/...
	$(BIN)/controller-gen crd rbac:roleName=datapilot-manager paths=./api/... paths=./internal/... output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	$(GO) run ./hack/crdtrim config/crd/bases/data.example.com_flinkclusters.yaml
	hack/sync-chart.sh

manifests: generate

## verify-generated: fail when generated files are stale
verify-generated: generate
	@git diff --exit-code -- api config/crd/bases config/rbac/role.yaml charts/datapilot/crds charts/datapilot/files/role.yaml || { echo "Generated files are stale: run 'make generate' and commit the result."; exit 1; }

build:
	$(GO) build -o $(BIN)/datapilot ./cmd/datapilot

## bench: the scale benchmark (not part of make test); N=1000 with `make bench BENCH_N=1000`
BENCH_N ?= 100
bench: tools build
	$(GO) run ./bench -n $(BENCH_N)

## test-unit: unit tests and the integration tier (envtest: real kube-apiserver and etcd from bin/)
export KUBEBUILDER_ASSETS := $(BIN)
test-unit:
	$(GOTEST) -count=1 -timeout 15m $$($(GO) list ./... | grep -v -e /test/e2e -e /test/chaos -e /bench)

## test-e2e: the local platform, the Flink REST simulator and the operator binary
test-e2e: build
	$(GOTEST) -count=1 -timeout 20m ./test/e2e/...

## test-chaos: the control plane failing under load, on a platform of its own (small N)
CHAOS_N ?= 6
test-chaos: build
	$(GOTEST) -count=1 -timeout 20m ./test/chaos/... -args -chaos.n=$(CHAOS_N)

## bench-chaos: the chaos tier at scale, `make bench-chaos CHAOS_N=100`
bench-chaos: CHAOS_N = 50
bench-chaos: test-chaos

## run: the embedded local platform with Datapilot in it (Ctrl-C stops everything)
run: tools build
	$(BIN)/datapilot local up

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

test: tools verify-generated build chart-lint kustomize-check test-unit test-e2e test-chaos
