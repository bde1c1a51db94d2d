"""The data layer: targets and the networks that come with them. The Picbreeder genomes and FER's
networks (`picbreeder`; their pinned download `fer_data`, the fork's extra targets `fer_fork`, the
restricted unpickler `jaxpickle`), NEAT genome graphs and their layerization (`graph`), the target
registry (`targets`: `get_target(spec)`), the image a label-anchored judge compares with (`anchors`:
`anchor_image(spec, res, anchor)`) and network specs (`specs`: `load_network(spec)`).
Imports only `volratio.util`, `volratio.nets` and `volratio.errors`."""
