"""The bottom layer: what every other part of the library uses and that uses nothing of it but
`volratio.errors` — devices and seeded generators (`device`), thread counts (`threads`), the memory
budget (`budget`), safe file writing (`fileio`), image conversion (`images`), statistics
(`stats`) and the fingerprint of the machine a result was measured on (`machine`)."""
