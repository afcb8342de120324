"""The deterministic simulator: a whole deployment in one process in virtual time, its scenarios
and seeded generators, the audits and reports of a run, and the merger topology's drawing."""
