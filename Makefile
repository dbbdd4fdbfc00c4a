# virtkit: run virtual machines on Kubernetes. `make run` and `make test` are
# the two commands a fresh machine needs; every other target is a step of them.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
OUT := $(CURDIR)/_output
TOOLS := $(OUT)/tools
export GOFLAGS := -buildvcs=false

# Packages that link libvirt through cgo (a regular expression over import
# paths); everything else must build without cgo.
CGO_PACKAGES := /virt/domain/libvirt($$|/)|/daemons/virt-launcher$$|/daemons/virt-handler$$|/daemons/virt-local$$|/test/|/hack/bootguest$$|/hack/bench/(density|install|migration|overhead|realnode|scale|snapshots|internal/plain)$$|/internal/localcluster$$

# Nested Go modules with tests and code of their own: hack/bench keeps the
# benchmarks' dependencies (plotting, profiles) out of the SDK's go.mod. The
# root module's `./...` stops at their go.mod, so test, lint and check-pure
# visit each of them too. Their tests run one package at a time: each
# benchmark starts a virt-local of its own on the same machine.
NESTED_MODULES := hack/bench

# API groups whose CRDs deploy/crds serves (see hack/crdgen). An older version
# still served is generated on its own (controller-gen wants a storage-version
# marker kubevirt.io/api does not carry) and merged into its CRD by crdgen.
CRD_PATHS := paths=kubevirt.io/api/core/v1 paths=kubevirt.io/api/instancetype/v1beta1 paths=kubevirt.io/api/migrations/v1alpha1 paths=kubevirt.io/api/pool/v1beta1 paths=kubevirt.io/api/clone/v1beta1 paths=kubevirt.io/api/snapshot/v1beta1 paths=kubevirt.io/api/export/v1beta1 paths=kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1 paths=github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1 paths=github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1
CRD_OLDER_VERSIONS := kubevirt.io/api/pool/v1alpha1 kubevirt.io/api/clone/v1alpha1
define crd-raw
	rm -rf $(OUT)/crd-raw
	cd hack/tools && $(TOOLS)/controller-gen crd:allowDangerousTypes=true $(CRD_PATHS) output:crd:dir=$(OUT)/crd-raw
	cd hack/tools && for p in $(CRD_OLDER_VERSIONS); do $(TOOLS)/controller-gen crd:allowDangerousTypes=true paths=$$p output:crd:dir=$(OUT)/crd-raw/older-$$(echo $$p | tr / _); done
endef

.PHONY: run stop boot-guest test test-short fuzz chaos deps kube-bins cni-bins containerd-bins csi-bins guest images images-push manifests tools generate verify-generated lint check-pure clean daemons bench-overhead bench-density bench-migration bench-real-node bench-install bench-scale bench-import bench-snapshot

## run: start virt-local (a real single-machine Kubernetes with virtkit), boot examples/manifests/vm-tiny.yaml, show its console
run: deps kube-bins cni-bins csi-bins guest daemons
	go run ./hack/run -data-dir $(OUT)/local -bin-dir $(OUT)/bin -guest $(OUT)/guest -manifest examples/manifests/vm-tiny.yaml

## stop: stop virt-local (guests shut down gracefully; state stays in _output/local)
stop:
	@if [ -x $(OUT)/bin/virt-local ]; then $(OUT)/bin/virt-local down --data-dir $(OUT)/local; else echo "virt-local: not built"; fi

## boot-guest: boot the test guest under a private libvirtd, no Kubernetes, and print its console (Ctrl-C stops it)
boot-guest: deps guest
	go run ./hack/bootguest -out $(OUT)/run

## test: every test, installing and building what the tests need first
test: deps kube-bins cni-bins containerd-bins csi-bins guest daemons images lint check-pure verify-generated
	go test -count=1 -timeout 45m ./...
	@for m in $(NESTED_MODULES); do echo "cd $$m && go test -p 1 -count=1 -timeout 45m ./..."; (cd $$m && go test -p 1 -count=1 -timeout 45m ./...); done
	bash hack/fuzz.sh 10s

## test-short: unit tests only (no real processes)
test-short:
	go test -short -count=1 ./...
	@for m in $(NESTED_MODULES); do echo "cd $$m && go test -short -count=1 ./..."; (cd $$m && go test -short -count=1 ./...); done

## fuzz: run every fuzz target for FUZZTIME each (default 60s; `make test` runs each for 10s), ending with a line of totals
FUZZTIME ?= 60s
fuzz:
	bash hack/fuzz.sh $(FUZZTIME)

## chaos: kill every daemon, and libvirtd and QEMU in a launcher, at every step of a VM's life on a split virt-local (`make test` runs one step each); log in _output/chaos.log, ending with chaos_runs=N survived=N orphans=N data_lost=N
chaos: deps kube-bins cni-bins guest daemons
	@echo "the chaos suite: about 10 minutes; log in $(OUT)/chaos.log"
	VIRTKIT_CHAOS=full go test -count=1 -timeout 80m -run 'TestChaos$$' -v ./test/e2e/ > $(OUT)/chaos.log 2>&1 || true
	@grep -E '^ *--- (PASS|FAIL)|ORPHAN|DATA LOST' $(OUT)/chaos.log || true
	@grep -m1 '^chaos_runs=' $(OUT)/chaos.log || { tail -20 $(OUT)/chaos.log; exit 1; }
	@grep -q '^ok ' $(OUT)/chaos.log

## deps: Debian packages and the libvirt-qemu user (idempotent)
deps:
	@bash hack/deps.sh

## kube-bins: etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kubelet into _output/bin
kube-bins:
	@bash hack/kube/build.sh $(OUT)/bin

## csi-bins: the upstream storage components next to virt-local's CSI driver (csi-provisioner, csi-resizer, csi-snapshotter, snapshot-controller) into _output/bin
csi-bins:
	@bash hack/csi/build.sh $(OUT)/bin

## cni-bins: the CNI plugins of a local node's pod network (bridge, host-local, loopback) into _output/cni/bin
cni-bins:
	@bash hack/cni/build.sh $(OUT)/cni/bin

## containerd-bins: containerd, containerd-shim-runc-v2 and ctr (the container runtime of a real kubelet node) into _output/containerd/bin
containerd-bins:
	@bash hack/containerd/build.sh $(OUT)/containerd/bin

## guest: the test guest (kernel, initramfs, a disk that boots under BIOS and EFI) into _output/guest
guest:
	@bash hack/guest/build.sh $(OUT)/guest

tools:
	@bash hack/tools/build.sh $(TOOLS)

## generate: deploy/crds from kubevirt.io/api, deploy/instancetypes from hack/instancetypes
generate: tools
	$(crd-raw)
	go run ./hack/crdgen -in $(OUT)/crd-raw -out deploy/crds -prerequisites-out deploy/prerequisites
	go run ./hack/instancetypes -out deploy/instancetypes/common-clusterinstancetypes.yaml

verify-generated: tools
	@rm -rf $(OUT)/crd-check
	@$(crd-raw)
	@go run ./hack/crdgen -in $(OUT)/crd-raw -out $(OUT)/crd-check/crds -prerequisites-out $(OUT)/crd-check/prerequisites
	@diff -r deploy/crds $(OUT)/crd-check/crds >/dev/null || { echo "deploy/crds is out of date: run 'make generate'" >&2; exit 1; }
	@diff -r deploy/prerequisites $(OUT)/crd-check/prerequisites >/dev/null || { echo "deploy/prerequisites is out of date: run 'make generate'" >&2; exit 1; }
	@go run ./hack/instancetypes -out $(OUT)/instancetypes-check.yaml
	@cmp -s deploy/instancetypes/common-clusterinstancetypes.yaml $(OUT)/instancetypes-check.yaml || { echo "deploy/instancetypes is out of date: run 'make generate'" >&2; exit 1; }

## lint: gofmt, go vet, staticcheck
lint: tools
	@bad=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); \
	  if [[ -n "$$bad" ]]; then echo "gofmt needed: $$bad" >&2; exit 1; fi
	go vet ./...
	$(TOOLS)/staticcheck ./...
	@for m in $(NESTED_MODULES); do echo "cd $$m && go vet ./... && staticcheck ./..."; (cd $$m && go vet ./... && $(TOOLS)/staticcheck ./...); done

## check-pure: every package outside CGO_PACKAGES builds with CGO_ENABLED=0, and the pure packages (internal/layering.Pure) for darwin/arm64 and windows/amd64 too
check-pure:
	@pkgs=$$(go list ./... | grep -v -E '$(CGO_PACKAGES)'); \
	  CGO_ENABLED=0 go build $$pkgs
	@for m in $(NESTED_MODULES); do \
	  pkgs=$$(cd $$m && go list ./... | grep -v -E '$(CGO_PACKAGES)' || true); \
	  if [[ -n "$$pkgs" ]]; then (cd $$m && CGO_ENABLED=0 go build $$pkgs); fi; \
	done
	@pure=$$(go run ./hack/purelist); \
	  for target in darwin/arm64 windows/amd64; do \
	    echo "check-pure: $$target: $$(echo $$pure)"; \
	    CGO_ENABLED=0 GOOS=$${target%/*} GOARCH=$${target#*/} go build $$pure; \
	  done

## daemons: build the daemons, virtctl and the pods' sandbox program (hack/pause) into _output/bin
daemons:
	go build -o $(OUT)/bin/ ./daemons/virt-launcher ./daemons/virt-handler ./daemons/virt-api ./daemons/virt-controller ./daemons/virt-operator ./daemons/virt-importer ./daemons/virt-exportserver ./daemons/virt-exportproxy ./daemons/virt-local ./cmd/virtctl ./hack/pause

## images: OCI images of the daemons (binaries plus Debian packages, no Docker) into the OCI layout _output/images
IMAGES_FLAGS = -bin $(OUT)/bin -out $(OUT)/images -cache $(OUT)/cache/debs
images: deps daemons
	go run ./hack/images $(IMAGES_FLAGS)

## manifests: the release manifests _output/deploy/virtkit-operator.yaml and kubevirt-cr.yaml, for images at IMAGE_REGISTRY/NAME:IMAGE_TAG
IMAGE_REGISTRY ?= 127.0.0.1:5000/virtkit
IMAGE_TAG ?= devel
manifests:
	go run ./hack/manifests -registry $(IMAGE_REGISTRY) -tag $(IMAGE_TAG) -out $(OUT)/deploy

## images-push: build the images and push them to REGISTRY=host[:port][/prefix] (plain HTTP on loopback)
images-push: deps daemons
	@if [[ -z "$${REGISTRY:-}" ]]; then echo "images-push: set REGISTRY=host[:port][/prefix]" >&2; exit 1; fi
	go run ./hack/images $(IMAGES_FLAGS) -push $(REGISTRY)

## bench-overhead: memory and start-up cost of a launcher per VM (N=4 VMs, RUNS=20 start-ups)
N ?= 4
RUNS ?= 20
bench-overhead: deps guest daemons
	cd hack/bench && go run ./overhead -repo $(CURDIR) -launcher $(OUT)/bin/virt-launcher -n $(N) -runs $(RUNS)

## bench-density: KubeVirt's density test on virt-local next to plain libvirt (DENSITY_N VMIs, 100 ms apart)
DENSITY_N ?= 20
bench-density: deps kube-bins cni-bins csi-bins guest daemons
	cd hack/bench && go run ./density -repo $(CURDIR) -n $(DENSITY_N) $(DENSITY_FLAGS)

## bench-scale: the control plane's cost per VMI at SCALE_N VMIs (one fresh cluster each) on SCALE_NODES hollow nodes, which boot nothing, 10 created per second
SCALE_N ?= 100,300,1000
SCALE_NODES ?= 10
bench-scale: deps kube-bins cni-bins csi-bins guest daemons
	cd hack/bench && go run ./scale -repo $(CURDIR) -n $(SCALE_N) -nodes $(SCALE_NODES) $(SCALE_FLAGS)

## bench-migration: live migration on virt-local (two nodes) next to a plain libvirt migration, for each of MIGRATION_SIZES MiB, and with a 1 GiB data disk copied
MIGRATION_SIZES ?= 256,1024
MIGRATION_RUNS ?= 3
bench-migration: deps kube-bins cni-bins csi-bins guest daemons
	cd hack/bench && go run ./migration -repo $(CURDIR) -sizes $(MIGRATION_SIZES) -runs $(MIGRATION_RUNS)

## bench-real-node: one VM on virt-local's real kubelet node next to its process node and plain libvirt (RUNS_REAL starts each), and the images' sizes
RUNS_REAL ?= 5
bench-real-node: deps kube-bins cni-bins csi-bins containerd-bins guest daemons images
	cd hack/bench && go run ./realnode -repo $(CURDIR) -runs $(RUNS_REAL)

## bench-install: install and upgrade virtkit through virt-operator on virt-local's real node, one VM running through the upgrade; the idle operator's memory and CPU
bench-install: deps kube-bins cni-bins csi-bins containerd-bins guest daemons images
	cd hack/bench && go run ./install -repo $(CURDIR)

## bench-snapshot: a VM snapshot and a restore of a 1 GiB and a 4 GiB disk on virt-local's CSI storage next to cp --reflink=auto --sparse=always of the same file, a download through a VirtualMachineExport next to plain curl, and DataVolume clones by the CSI driver next to ones by an importer pod, SNAPSHOT_RUNS runs each
SNAPSHOT_RUNS ?= 5
bench-snapshot: deps kube-bins cni-bins csi-bins guest daemons
	cd hack/bench && go run ./snapshots -runs $(SNAPSHOT_RUNS)

## bench-import: DataVolume imports over HTTPS on loopback (a 1 GiB qcow2 and raw.xz) next to curl plus qemu-img or xz, IMPORT_RUNS runs each
IMPORT_RUNS ?= 5
bench-import: deps
	cd hack/bench && go run ./imports -runs $(IMPORT_RUNS)

clean:
	rm -rf $(OUT)/run $(OUT)/crd-raw $(OUT)/crd-check
