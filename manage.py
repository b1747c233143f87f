#!/usr/bin/env python
"""Django's command-line utility for Agora."""

import os
import sys


def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agora.settings")
    # Before Django loads daphne (runserver), which makes its event loop at import.
    from agora.event_loop import install

    install()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
