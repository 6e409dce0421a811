import sys

from ajedrez.client.cli import main

sys.exit(main())
