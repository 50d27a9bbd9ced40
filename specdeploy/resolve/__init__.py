"""Resolution: the profile's names turned into facts (ModelSpec, GpuSpec, EnvironmentProbe, memory fit)."""
