"""`python -m agora.web [daphne's options] agora.asgi:application`: daphne, on uvloop.

daphne makes its event loop when it is imported, so the loop is chosen here first
(agora/event_loop.py); every option is daphne's own, but `--proxy-headers` reads the forwarded
headers only from the proxies Agora trusts (agora/proxies.py).
"""

from agora.event_loop import install


def main() -> None:
    install()
    import sys

    from daphne.cli import CommandLineInterface

    from agora.proxies import install_in_daphne

    # --proxy-headers believes X-Forwarded-For only from AGORA_TRUSTED_PROXIES (agora/proxies.py).
    install_in_daphne()

    sys.argv[0] = "daphne"  # its usage line names daphne
    CommandLineInterface.entrypoint()


if __name__ == "__main__":
    main()
