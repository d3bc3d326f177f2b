import sys

from kalbert.cli.main import main

sys.exit(main())
