import sys

from asad.cli import main

sys.exit(main())
