"""The ``faidecs`` command line. Argument handling and presentation only; the logic lives in
the library."""
