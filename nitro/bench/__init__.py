"""``nitro bench``: nitro's own speed, as ratios against references measured in the same run."""
