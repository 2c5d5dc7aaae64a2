"""kgnorm.evaluation"""
