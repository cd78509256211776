"""Writing real-format corpora (layer 2: imports ``read`` and the base modules).

``writer`` writes single session logs exactly as upstream stores them
(fixtures, the sample corpus, tests); ``pathologies`` and ``planted`` write logs with planted
pathologies and random corpora that record what they planted (``findings``' ground truth);
``plan``, ``events``, ``variants``
and ``generate`` synthesize large realistic corpora for benchmarks and scale
tests (``python -m subagent_catalog.synth OUT --sessions N --seed S``).
Nothing in the reading or listing code imports this package.
"""
