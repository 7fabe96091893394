#!/bin/sh
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Writes the rinxctl(8) man page from the tool's own --help texts, so the
# page and the tool cannot disagree.   mkman.sh <rinxctl> > rinxctl.8
set -e
bin=$1
esc() { sed -e 's/\\/\\e/g' -e 's/^\./\\\&./' -e "s/^'/\\\\\\&'/"; }
echo '.TH RINXCTL 8 "" "rinx" "rinx manual"'
echo '.SH NAME'
echo 'rinxctl \- set up, run and measure rinx allreduce clusters'
echo '.SH SYNOPSIS'
echo '.nf'
"$bin" --help | esc
echo '.fi'
echo '.SH COMMANDS'
for cmd in $("$bin" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }'); do
	echo ".SS $cmd"
	echo '.nf'
	"$bin" "$cmd" --help 2>&1 | esc
	echo '.fi'
done
echo '.SH SEE ALSO'
echo 'The design and wire format: docs/rinx.md in the rinx sources.'
