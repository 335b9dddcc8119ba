"""Benchmark families: variants, input features and input generators of real computations."""
