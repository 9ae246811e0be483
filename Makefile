# minimod-gpu: convenience targets around CMake.
#
#   make deps         install the Debian 12 packages the build needs (skipped when present)
#   make build        configure and build in $(BUILD_DIR); CUDA backend when nvcc is found
#   make demo         deps + build, then run input/demo.yaml (writes out/demo.h5)
#   make test         deps + build, then every test (GPU tests skip themselves without a GPU)
#   make install      deps + build, then install minimod-gpu into $(PREFIX)/bin
#   make test-gpu     build, then only the tests labelled gpu
#   make deps-hip     install Debian's hipcc (ROCm 5.2: AMD gfx90a) for the HIP backend
#   make build-hip    configure and build the HIP backend in $(HIP_BUILD_DIR) (no CUDA)
#   make test-hip     build-hip, then its GPU tests (they skip without an AMD GPU), the registry
#                     tests and `minimod-gpu kernels`, which must list hip kernels
#   make bench        build, then `minimod-gpu bench $(BENCH_ARGS)`
#   make format       clang-format -i every C++/CUDA source
#   make format-check fail when a source is not clang-formatted
#   make clean        remove $(BUILD_DIR)
#
# Variables: CMAKE_ARGS (extra configure arguments, e.g. -DMINIMOD_CUDA=OFF or
# -DCMAKE_CUDA_ARCHITECTURES=80), BUILD_DIR, HIP_BUILD_DIR, HIP_ARCHITECTURES, JOBS, BENCH_ARGS,
# CTEST_ARGS, CLANG_FORMAT, PREFIX
# (install prefix, default ~/.local, whose bin/ is on PATH in most login shells).

BUILD_DIR ?= build
HIP_BUILD_DIR ?= build-hip
HIP_ARCHITECTURES ?= gfx90a
CMAKE_ARGS ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BENCH_ARGS ?=
CTEST_ARGS ?=
CLANG_FORMAT ?= clang-format
PREFIX ?= $(HOME)/.local

DEB_PACKAGES := cmake g++ make libhdf5-dev hdf5-tools libyaml-cpp-dev libcli11-dev \
                libopenmpi-dev openmpi-bin googletest libgtest-dev python3-h5py python3-numpy \
                libsegyio-dev python3-segyio nlohmann-json3-dev python3-matplotlib python3-pip \
                zlib1g-dev strace python3-scipy python3-lxml python3-decorator python3-dev \
                python3-pytest python3-xarray python3-nbclient python3-nbformat python3-ipykernel \
                python3-tqdm

# apt-get needs root; use sudo only when we are not root already.
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

FORMAT_DIRS := $(wildcard app core solver kernels io models tests python)
FORMAT_FILES = $(shell find $(FORMAT_DIRS) -type f \( -name '*.cpp' -o -name '*.hpp' \
                 -o -name '*.cu' -o -name '*.cuh' \) 2>/dev/null | sort)

.PHONY: all deps build demo test test-gpu deps-hip build-hip test-hip install bench format \
        format-check clean

# Prerequisites run in the order written (deps before build); the build itself runs in parallel.
.NOTPARALLEL:

all: build

deps:
	@if ! command -v dpkg >/dev/null 2>&1; then \
	  echo "deps: no dpkg here; install these yourself: $(DEB_PACKAGES)"; \
	  exit 0; \
	fi; \
	missing=""; \
	for pkg in $(DEB_PACKAGES); do \
	  dpkg -s "$$pkg" 2>/dev/null | grep -q '^Status: install ok installed' || missing="$$missing $$pkg"; \
	done; \
	if [ -z "$$missing" ]; then \
	  echo "deps: all packages installed"; \
	else \
	  echo "deps: installing$$missing"; \
	  set -x; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $$missing; \
	fi

build:
	cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)
	cmake --build $(BUILD_DIR) -j$(JOBS)

demo: deps build
	$(BUILD_DIR)/minimod-gpu run input/demo.yaml

test: deps build
	ctest --test-dir $(BUILD_DIR) --output-on-failure --no-tests=error -j2 $(CTEST_ARGS)

test-gpu: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -L gpu $(CTEST_ARGS)

deps-hip:
	@if command -v hipcc >/dev/null 2>&1; then \
	  echo "deps-hip: hipcc installed"; \
	else \
	  set -x; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends hipcc; \
	fi

# The HIP backend: the portable kernels/gpu/ sources through hipcc, warnings as errors. A binary
# holds one GPU backend, so this build has no CUDA.
build-hip:
	cmake -S . -B $(HIP_BUILD_DIR) -DCMAKE_BUILD_TYPE=Release -DMINIMOD_CUDA=OFF -DMINIMOD_HIP=ON \
	  -DMINIMOD_HIP_ARCHITECTURES="$(HIP_ARCHITECTURES)" -DMINIMOD_WERROR=ON $(CMAKE_ARGS)
	cmake --build $(HIP_BUILD_DIR) -j$(JOBS)

test-hip: build-hip
	ctest --test-dir $(HIP_BUILD_DIR) --output-on-failure --no-tests=error -j2 -L gpu $(CTEST_ARGS)
	ctest --test-dir $(HIP_BUILD_DIR) --output-on-failure --no-tests=error -j2 \
	  -R 'GpuRegistry|BackendChoice|SelectionKernels|BenchOptions' $(CTEST_ARGS)
	@$(HIP_BUILD_DIR)/minimod-gpu kernels > $(HIP_BUILD_DIR)/kernels.txt
	@n=$$(awk '$$3 == "hip"' $(HIP_BUILD_DIR)/kernels.txt | wc -l); \
	echo "test-hip: minimod-gpu kernels lists $$n hip kernels"; \
	test "$$n" -gt 0

install: deps build
	cmake --install $(BUILD_DIR) --prefix "$(PREFIX)"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; \
	  *) echo "install: $(PREFIX)/bin is not on PATH; add it: export PATH=\"$(PREFIX)/bin:\$$PATH\"";; esac

bench: build
	$(BUILD_DIR)/minimod-gpu bench $(BENCH_ARGS)

format:
	$(if $(FORMAT_FILES),$(CLANG_FORMAT) -i $(FORMAT_FILES),@echo "format: no sources")

format-check:
	$(if $(FORMAT_FILES),$(CLANG_FORMAT) --dry-run -Werror $(FORMAT_FILES),@echo "format: no sources")

clean:
	rm -rf $(BUILD_DIR)
