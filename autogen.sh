#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Regenerates configure and the Makefile.in files from a git checkout.
set -e
cd "$(dirname "$0")"
autoreconf --force --install --warnings=all,no-portability
