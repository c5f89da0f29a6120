"""Offline stand-in for @rules_java//java:defs.bzl: Bazel 4.2's native Java rules, re-exported.

Bazel 4.2.3's @bazel_tools BUILD files (tools/jdk, ...) load these names from @rules_java,
which Bazel otherwise downloads (rules_java@7cf3cef, DEFAULT.WORKSPACE.SUFFIX).
"""

def java_binary(**attrs):
    native.java_binary(**attrs)

def java_import(**attrs):
    native.java_import(**attrs)

def java_library(**attrs):
    native.java_library(**attrs)

def java_plugin(**attrs):
    native.java_plugin(**attrs)

def java_proto_library(**attrs):
    native.java_proto_library(**attrs)

def java_runtime(**attrs):
    native.java_runtime(**attrs)

def java_test(**attrs):
    native.java_test(**attrs)

def java_toolchain(**attrs):
    native.java_toolchain(**attrs)
