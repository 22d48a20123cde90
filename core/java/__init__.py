"""The Java programs mm2ctl compiles once and runs, their poms, the JDK's tools, and Maven: one owner of a
program's class path."""
