import sys

from asad.cli.main import main

sys.exit(main())
