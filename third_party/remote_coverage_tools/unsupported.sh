#!/bin/sh
echo "coverage is not available offline (third_party/remote_coverage_tools is a stub)" >&2
exit 1
