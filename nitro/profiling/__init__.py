"""Profiles of variant calls and application proxies: metrics normalised by instructions
executed, recorded for profile-based device-feature selection (P-DFS).

``profile_call(fn, args) -> {metric: value}`` is the one entry point a device kind offers;
:mod:`nitro.profiling.cpu` implements it for CPUs (callgrind, deterministic), and
:mod:`nitro.profiling.record` runs it over a code variant's training inputs and over the
application proxies, writing the profiles to the store.
"""
from .cpu import profile_call, profile_calls

__all__ = ["profile_call", "profile_calls"]
