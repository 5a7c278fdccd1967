"""The `forgemem` command: each command parses, calls one library function, prints. Nothing 
imports it.
"""
