import sys

from .server_main import main

sys.exit(main())
