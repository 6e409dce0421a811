import sys

from ajedrez.client_command import main

sys.exit(main())
