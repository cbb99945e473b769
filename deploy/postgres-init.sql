-- Run once by the pgvector/pgvector:pg16 image on an empty data folder
-- (/docker-entrypoint-initdb.d), as POSTGRES_USER in POSTGRES_DB (`memory`): Dagster's
-- storage gets a database of its own, and the memory database the vector extension (the
-- first migration creates it too, which needs this privilege on a managed server).
CREATE EXTENSION IF NOT EXISTS vector;
CREATE DATABASE dagster;
