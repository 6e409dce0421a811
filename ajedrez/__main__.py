import sys

from ajedrez.server.main import main

sys.exit(main())
