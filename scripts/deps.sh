#!/usr/bin/env bash
# Installs what the test suite needs on a fresh machine. Safe to run again.
#   - go (1.26) must be there already;
#   - git (the gofmt check lists tracked files);
#   - prometheus (the fleet-wide dependency memory is tested against a real
#     Prometheus server on 127.0.0.1);
#   - chromium (the debug page is rendered and screenshotted headless).
set -euo pipefail

if ! command -v go >/dev/null 2>&1; then
	echo "deps: the go command is required (Go 1.26)" >&2
	exit 1
fi

missing=()
command -v git >/dev/null 2>&1 || missing+=(git)
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "deps: missing ${missing[*]}; run as root or install them: apt-get install -y ${missing[*]}" >&2
		exit 1
	fi
	echo "deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The Debian package may start a server of its own; the tests start theirs.
# The workspace (go.work): errown and the modules built on it.
go mod download
# bench/peers is a module of its own outside the workspace (the retry
# libraries it compares errown with stay out of errown's go.mod).
(cd bench/peers && GOWORK=off go mod download)
