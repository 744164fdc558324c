"""Peer jobs for bench/scenarios/peers.py, each run as its own subprocess so the
peers' imports never reach the bench process."""
