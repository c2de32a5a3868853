"""Layouts: the backend's `LayoutRules` (`rules`), the thread -> element mapping (`mapping`),
the axis-info analysis (`axis_info`) and layout assignment (`assignment.to_gir`).

The package itself imports nothing: `tilec.backend` needs only `rules`, and a launch that hits
the compile cache should not pay for the layout passes.
"""
