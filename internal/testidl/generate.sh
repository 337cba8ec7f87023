#!/usr/bin/env bash
# generate.sh regenerates errown's test IDL code:
#
#   thrift/echo.thrift -> thrift/echo/...   (thriftrw + yarpc plugin)
#   proto/echo.proto   -> proto/echopb/...  (protoc + gogoslick + yarpc-go)
#
# It is what `go generate ./internal/testidl` runs. The generated code is
# committed, so builds and tests never need it. It needs Go and, for
# protobuf, protoc on PATH (Debian: apt-get install protobuf-compiler).
# The generators are built at the versions yarpc v1.81.0 itself uses (see
# yarpc's etc/make/deps.mk and etc/bin/generate.sh): thriftrw v1.32.0, the
# yarpc plugins of yarpc v1.81.0, gogo/protobuf v1.3.2.
#
# Usage: generate.sh [thrift|proto]...   (both when none is given)
set -euo pipefail

THRIFTRW_VERSION=v1.32.0
YARPC_VERSION=v1.81.0
GOGO_VERSION=v1.3.2

MODULE=github.com/errown/errown
DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)" # internal/testidl
ROOT="$(cd "${DIR}/../.." && pwd)"                   # module root
REL=internal/testidl

WORK="$(mktemp -d)"
trap 'rm -rf "${WORK}"' EXIT
BIN="${WORK}/bin"
export PATH="${BIN}:${PATH}"

# build_generators builds the generators into ${BIN} from a throwaway
# module that pins them, so that errown's go.mod and go.sum stay as they
# are. (`go install pkg@version` would do as well, but needs the proxy's
# version list, which a restricted proxy may refuse.)
build_generators() {
	[ ! -d "${BIN}" ] || return 0
	mkdir -p "${WORK}/tools"
	cat >"${WORK}/tools/go.mod" <<-MOD
		module errown.invalid/testidl-generators

		go 1.26.0

		require (
			github.com/gogo/protobuf ${GOGO_VERSION}
			go.uber.org/thriftrw ${THRIFTRW_VERSION}
			go.uber.org/yarpc ${YARPC_VERSION}
		)
	MOD
	(cd "${WORK}/tools" && GOFLAGS=-mod=mod GOWORK=off go build -o "${BIN}/" \
		go.uber.org/thriftrw \
		go.uber.org/yarpc/encoding/thrift/thriftrw-plugin-yarpc \
		github.com/gogo/protobuf/protoc-gen-gogoslick \
		go.uber.org/yarpc/encoding/protobuf/protoc-gen-yarpc-go)
}

gen_thrift() {
	build_generators
	cd "${ROOT}"
	# Drop the previous output, hand-written doc.go files aside.
	if [ -d "${REL}/thrift/echo" ]; then
		find "${REL}/thrift/echo" -type f ! -name doc.go -delete
	fi
	thriftrw --plugin=yarpc \
		--pkg-prefix="${MODULE}/${REL}/thrift" \
		--out="${REL}/thrift" \
		"${REL}/thrift/echo.thrift"
}

gen_proto() {
	command -v protoc >/dev/null || {
		echo "generate.sh: protoc not found (apt-get install protobuf-compiler)" >&2
		exit 1
	}
	build_generators
	cd "${ROOT}"
	out="$(mktemp -d)"
	# As yarpc's etc/bin/generate.sh: gogoslick with the grpc plugin for
	# the messages, yarpc-go for the YARPC client and server. Both write
	# next to the source path; the files then move into proto/echopb.
	protoc -I . \
		--gogoslick_out="plugins=grpc,paths=source_relative:${out}" \
		--yarpc-go_out="${out}" \
		"${REL}/proto/echo.proto"
	mkdir -p "${REL}/proto/echopb"
	mv "${out}/${REL}/proto/echo.pb.go" "${out}/${REL}/proto/echo.pb.yarpc.go" "${REL}/proto/echopb/"
	rm -rf "${out}"
}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(thrift proto)
for t in "${targets[@]}"; do
	case "${t}" in
	thrift) (gen_thrift) ;;
	proto) (gen_proto) ;;
	*)
		echo "generate.sh: unknown target ${t} (want thrift or proto)" >&2
		exit 2
		;;
	esac
done
gofmt -l "${DIR}" | (! grep .) || { echo "generate.sh: output is not gofmt-clean" >&2; exit 1; }
