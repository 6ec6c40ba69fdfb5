# Datapilot. The README's two commands are `make run` and `make test`.
SHELL := /usr/bin/env bash -o pipefail
BIN := $(CURDIR)/bin
export PATH := $(BIN):$(PATH)
GO ?= go
GOTEST ?= $(GO) test

.PHONY: all tools generate manifests verify-generated build test test-unit test-integration test-e2e run bench

all: build

## tools: build the pinned control plane and generators into bin/ (skips what is up to date)
tools:
	@hack/tools/build.sh

## generate: deepcopy and CRD/RBAC manifests from the API markers
generate: tools
	$(BIN)/controller-gen object paths=./api/...
	$(BIN)/controller-gen crd rbac:roleName=datapilot-manager paths=./api/... paths=./internal/... output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac

manifests: generate

## verify-generated: fail when generated files are stale
verify-generated: generate
	@git diff --exit-code -- api config/crd/bases config/rbac/role.yaml || { echo "Generated files are stale: run 'make generate' and commit the result."; exit 1; }

build:
	$(GO) build -o $(BIN)/datapilot ./cmd/datapilot

test-unit:
	$(GOTEST) -count=1 $$($(GO) list ./... | grep -v -e /test/e2e -e /bench)

test: tools verify-generated build test-unit
