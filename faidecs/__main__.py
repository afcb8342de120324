import sys

from faidecs.cli.main import main

sys.exit(main())
