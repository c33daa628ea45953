# redlease — `make help` lists the targets.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen
HELM := $(BIN)/helm
# bin/kubectl (make tools) comes first on PATH; without it, yours.
KUBECTL := kubectl
export KUBEBUILDER_ASSETS := $(BIN)
export PATH := $(BIN):$(PATH)

# Per-package test timeout; the whole run is bounded by CI's limit too.
TEST_TIMEOUT ?= 10m
GO_TEST_FLAGS ?= -race -count=1 -timeout $(TEST_TIMEOUT)

.DEFAULT_GOAL := help

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: fmt
fmt: ## gofmt every Go file.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## go vet ./...
	go vet ./...

# The modules golangci-lint checks, each with the one .golangci.yml at the root.
LINT_MODULES := . bench hack/ocibuild test/monitoring

# actionlint without shellcheck and pyflakes (-shellcheck= -pyflakes=): the
# same verdict on every machine, whether or not those are installed.
.PHONY: lint
lint: vet ## golangci-lint (.golangci.yml) over the root module, bench/, hack/ocibuild and test/monitoring (waiting for another golangci-lint on the machine rather than failing); gofmt check; go vet; actionlint over .github/workflows.
	@hack/install-tools.sh golangci-lint actionlint
	$(BIN)/actionlint -shellcheck= -pyflakes=
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@rc=0; for m in $(LINT_MODULES); do \
		echo "golangci-lint run ./... (in $$m)"; \
		(cd $$m && $(BIN)/golangci-lint run --allow-serial-runners --config $(CURDIR)/.golangci.yml ./...) || rc=1; \
	done; exit $$rc

.PHONY: manifests
manifests: tools-gen ## Generate the CRD, RBAC role from kubebuilder markers; refresh the Helm chart's copies of them and its README (from values.yaml's comments), and the reference pages in docs/reference.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="{./api/...,./controllers/...}" output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	@mkdir -p charts/redlease/files/crds && rm -f charts/redlease/files/crds/*.yaml && cp config/crd/bases/*.yaml charts/redlease/files/crds/ && cp config/rbac/role.yaml charts/redlease/files/role.yaml
	go run ./hack/chartreadme charts/redlease
	go run ./hack/refdocs

.PHONY: generate
generate: tools-gen ## Generate deepcopy code from kubebuilder markers; lint the lock agent's protobuf API (buf lint) and generate its Go code (buf generate).
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/v1alpha1/..."
	$(BIN)/buf lint
	$(BIN)/buf generate

# The SVGs name DejaVu Sans, the font dot measured their text with (the one
# hack/install-docs-tools.sh installs); the sed adds fallbacks of similar width
# for browsers without it.
.PHONY: diagrams
diagrams: ## Render the pictures of the docs, docs/diagrams/*.dot, to docs/images/*.svg with Graphviz (installed by hack/install-docs-tools.sh when missing); a diagram's change is a diff of its source.
	@hack/install-docs-tools.sh graphviz
	@mkdir -p docs/images && rm -f docs/images/*.svg
	@for f in docs/diagrams/*.dot; do \
		out=docs/images/$$(basename $$f .dot).svg; echo "dot -Tsvg $$f > $$out"; \
		dot -Tsvg $$f | sed 's/font-family="DejaVu Sans"/font-family="DejaVu Sans,Verdana,sans-serif"/g' > $$out; \
	done

# Where make docs writes the site.
SITE_DIR ?= dist/site

.PHONY: docs
docs: ## Build the docs site (Hugo, built from source and cached like the other tools) from docs/ and the top-level pages into dist/site, printing its build time; fail on a broken internal link or anchor, a page no link reaches, or a search entry that leads nowhere (hack/sitecheck). site/ holds only its config and theme.
	@hack/install-tools.sh hugo
	@start=$$(date +%s%N); $(BIN)/hugo --source site --destination $(CURDIR)/$(SITE_DIR) --cleanDestinationDir --noBuildLock --quiet; \
		echo "docs: hugo built $(SITE_DIR) in $$(( ($$(date +%s%N) - start) / 1000000 )) ms"
	go run ./hack/sitecheck $(SITE_DIR)

# Every module of the repository: each must be tidy.
GO_MODULES := . bench hack/tools hack/ocibuild test/monitoring

.PHONY: tidy-check
tidy-check: ## Fail when any module's go.mod/go.sum is not tidy (go mod tidy -diff).
	@rc=0; for m in $(GO_MODULES); do \
		(cd $$m && go mod tidy -diff >/dev/null) || { echo "go.mod in $$m is not tidy: run 'cd $$m && go mod tidy'"; (cd $$m && go mod tidy -diff) | head -40; rc=1; }; \
	done; exit $$rc

.PHONY: verify
verify: manifests generate diagrams lint tidy-check ## Fail when generated files (diagrams' SVGs included) are stale, a module is not tidy, or the code fails lint.
	@git diff --exit-code --stat -- config api charts/redlease/files charts/redlease/README.md docs/reference docs/images || { echo "generated files are stale: run 'make manifests generate diagrams' and commit"; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- config api charts/redlease/files charts/redlease/README.md docs/reference docs/images); if [ -n "$$untracked" ]; then echo "untracked generated files:"; echo "$$untracked"; exit 1; fi

.PHONY: test
test: tools redis servers postgres clients browser verify docs helm-lint ## Install what tests need, verify, build the docs site and check its links, run every test with -race against real Redis, PostgreSQL and a real API server (the fault suite's short pass included), then make test-node where the machine can (CI must), then the server matrix on the other servers whose sources are in ../shared/servers (make test-servers).
	$(STEPPABLE) go test $(GO_TEST_FLAGS) ./...
	@echo "internal/protocol again, through the function library (-protocol.functions)"
	$(STEPPABLE) go test $(GO_TEST_FLAGS) ./internal/protocol/ -args -protocol.functions
	cd hack/ocibuild && go test -count=1 ./...
	cd test/monitoring && go test -count=1 ./...
	NODE_OPTIONAL=1 hack/node/run.sh
	SERVERS_SKIP_INSTALLED=1 hack/test-servers.sh

# A redis-server that runs under libfaketime, for the tests that step a
# server's clock (Debian's links the system jemalloc, which hangs there):
# the first server make servers built.
STEPPABLE = REDLEASE_STEPPABLE_SERVER=$$(hack/build-servers.sh | sed -n '1s|$$|/redis-server|p')

# go test -run pattern of the node scenarios, e.g. NODE_RUN=Scenario3.
NODE_RUN ?= .

.PHONY: test-node
test-node: ## A real single-node cluster (kubelet, containerd, runc; root): helm install + helm test, Sentinel in pods with ACL tenants, active/standby pods, a frozen holder, leader election in pods, a CronJob, operator and Redis failovers, uninstall, kubectl apply -k, the release from an OCI registry; tears it all down on every exit path (docs/node.md).
	hack/node/run.sh '$(NODE_RUN)'

##@ Server flavours

.PHONY: servers
servers: ## Build the Redis-compatible servers whose sources are in ../shared/servers (Valkey 8.0.1, Redis 7.4.1; checksums checked, cached outside the clone).
	hack/build-servers.sh >/dev/null

.PHONY: test-servers
test-servers: tools redis ## The server matrix: protocol (both ways), lock, election, tenant ACLs, controller probe/guard/preflight and a chaos subset on Debian's redis-server and on every server `make servers` builds; prints flavour × suite.
	hack/test-servers.sh

CHAOS_COUNT ?= 5

.PHONY: test-chaos
test-chaos: redis postgres ## The fault-injection suite with its full budget: every scenario $(CHAOS_COUNT) times with fresh seeds, bounded to 15 minutes.
	go test -race -count=$(CHAOS_COUNT) -v -timeout 15m ./test/chaos/ -args -chaos.full

# Extra flags for the side-by-side runner, e.g. BENCH_FLAGS=-quick.
BENCH_FLAGS ?=

.PHONY: bench
bench: redis ## Benchmarks on real Redis: pkg/lock, then redlease vs redsync/redislock and through the lock agent (bench/); table, plots in docs/.
	go test -run '^$$' -bench . -benchmem ./pkg/...
	cd bench && go run ./cmd/benchrun -plots ../docs $(BENCH_FLAGS)

.PHONY: bench-scale
bench-scale: redis ## The controller at scale: 10,000 DistributedLocks on one LockStore (start to all Ready, steady CPU, memory, connections, status writes/s), and 1,000 inline locks on 10 redis-servers.
	go test -run '^$$' -bench ThousandLocks -benchtime 1x -timeout 30m ./controllers/

##@ Build

.PHONY: build
build: ## Build every command (manager, lockctl, demo) into bin/.
	@for c in $$(ls cmd); do echo "go build ./cmd/$$c"; CGO_ENABLED=0 go build -ldflags "$(GO_LDFLAGS)" -o $(BIN)/$$c ./cmd/$$c; done

# Flags for `make run`, e.g. make run RUN_ARGS="--probe-interval=5s --watch-namespaces=dev".
RUN_ARGS ?=

.PHONY: run
run: manifests ## Run the manager against the current kubeconfig (install the CRDs first: make install).
	go run ./cmd/manager --health-probe-bind-address=0 $(RUN_ARGS)

.PHONY: demo
demo: tools redis build ## The whole product on this machine: control plane, Redis, operator, workers, a paused holder refused by the fence. ARGS=--keep leaves it running.
	$(BIN)/demo $(ARGS)

# The one version source: the VERSION file (make release VERSION=vX.Y.Z
# overrides it for one build). The binaries, the images' labels and the
# released chart's version and appVersion all take it from here.
VERSION ?= $(shell cat $(CURDIR)/VERSION)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
# The registry the images are published to, as <REGISTRY>/redlease/manager
# and <REGISTRY>/redlease/lockctl: `make image` tags them so and `make
# release REGISTRY=mirror.example:5000` stamps it into the chart (hence
# install.yaml) and the samples it writes, so a mirror needs this one setting.
REGISTRY ?= ghcr.io
IMAGE_REPO := $(REGISTRY)/redlease
VERSION_PKG := github.com/redlease/redlease/internal/version
GO_LDFLAGS := -s -w -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).revision=$(REVISION)

# Platforms of the images: one OCI image index holds them all.
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
# The CA bundle the images carry at /etc/ssl/certs/ca-certificates.crt
# (Debian's ca-certificates package).
IMAGE_CA ?= /etc/ssl/certs/ca-certificates.crt

.PHONY: image
image: ## Build multi-platform OCI image archives (linux/amd64, linux/arm64) for the manager and lockctl into dist/ (static binaries, CA bundle, empty base, non-root; no Docker engine).
	@for c in manager lockctl; do \
		plats=""; \
		for p in $(IMAGE_PLATFORMS); do \
			os=$${p%/*}; arch=$${p#*/}; out=dist/bin/$$os-$$arch/$$c; \
			echo "building $$c ($$p, static)"; \
			CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags "$(GO_LDFLAGS)" -o $$out ./cmd/$$c; \
			plats="$$plats -platform $$p=$(CURDIR)/$$out"; \
		done; \
		(cd hack/ocibuild && go run . $$plats -ca $(IMAGE_CA) -tag $(IMAGE_REPO)/$$c:$(VERSION) \
			-revision "$(REVISION)" -out $(CURDIR)/dist/$$c-$(VERSION).tar); \
	done

# The release's output directory and platforms (a test builds one).
DIST ?= dist
LOCKCTL_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

.PHONY: release
release: ## make release VERSION=vX.Y.Z [REGISTRY=ghcr.io]: images (named REGISTRY/redlease/*), lockctl binaries, the chart with digests pinned and REGISTRY stamped, install.yaml, crds.yaml, the samples, SBOMs and SHA256SUMS in dist/ (hack/release.sh).
	@hack/install-tools.sh helm
	VERSION=$(VERSION) REVISION=$(REVISION) GO_LDFLAGS="$(GO_LDFLAGS)" DIST=$(DIST) REGISTRY=$(REGISTRY) \
		IMAGE_PLATFORMS="$(IMAGE_PLATFORMS)" LOCKCTL_PLATFORMS="$(LOCKCTL_PLATFORMS)" IMAGE_CA=$(IMAGE_CA) HELM=$(HELM) \
		hack/release.sh

# make publish's signing key (cosign generate-key-pair; its password in
# COSIGN_PASSWORD), or COSIGN_KEYLESS=1 for the release workflow's identity.
COSIGN_KEY ?=
COSIGN_KEYLESS ?=
# PLAIN_HTTP=1: the registry speaks HTTP without TLS (a local one).
PLAIN_HTTP ?=

.PHONY: publish
publish: ## make publish VERSION=vX.Y.Z [REGISTRY=ghcr.io] [COSIGN_KEY=cosign.key | COSIGN_KEYLESS=1] [PLAIN_HTTP=1]: push make release's images and chart (dist/) to REGISTRY/redlease/{manager,lockctl} and oci://REGISTRY/redlease/charts/redlease, and sign each by digest with cosign (hack/publish.sh; docs/signing.md).
	@hack/install-tools.sh helm cosign
	VERSION=$(VERSION) DIST=$(DIST) REGISTRY=$(REGISTRY) HELM=$(HELM) COSIGN=$(BIN)/cosign \
		COSIGN_KEY=$(COSIGN_KEY) COSIGN_KEYLESS=$(COSIGN_KEYLESS) PLAIN_HTTP=$(PLAIN_HTTP) hack/publish.sh

##@ Deployment

.PHONY: install
install: manifests ## Install the CRDs into the current cluster.
	$(KUBECTL) apply -f config/crd/bases

.PHONY: uninstall
uninstall: manifests ## Remove the CRDs from the current cluster.
	$(KUBECTL) delete --ignore-not-found -f config/crd/bases

.PHONY: deploy
deploy: manifests ## Deploy CRDs, RBAC and the manager to the current cluster (kubectl apply -k config/default; the image must be loadable by the cluster).
	$(KUBECTL) apply -k config/default

.PHONY: undeploy
undeploy: ## Remove what deploy created (CRDs included: their DistributedLocks go too; Redis is left alone).
	$(KUBECTL) delete --ignore-not-found -k config/default

.PHONY: helm-lint
helm-lint: ## helm lint --strict the chart with its default values and with each charts/redlease/ci/*-values.yaml.
	@hack/install-tools.sh helm
	$(HELM) lint --strict charts/redlease
	@for f in charts/redlease/ci/*-values.yaml; do echo "$(HELM) lint --strict --quiet charts/redlease -f $$f"; $(HELM) lint --strict --quiet charts/redlease -f $$f; done

##@ Tools

.PHONY: tools
tools: ## Build kube-apiserver, etcd, kubectl, helm, controller-gen, golangci-lint, actionlint, cosign, buf from source (cached outside the clone).
	hack/install-tools.sh

.PHONY: tools-gen
tools-gen:
	@hack/install-tools.sh controller-gen proto

.PHONY: redis
redis: ## Install Debian's redis-server and redis-sentinel when missing.
	hack/install-redis.sh

.PHONY: clients
clients: ## Install what the lock agent's example clients need when missing (curl, python3, Node.js 20+ and npm).
	hack/install-clients.sh

.PHONY: browser
browser: ## Install Debian's Chromium when missing (test/site opens the built docs site in it, headless).
	hack/install-docs-tools.sh chromium

.PHONY: postgres
postgres: ## Install PostgreSQL's server binaries when missing (fenced SQL writes in the fault suite).
	hack/install-postgres.sh
