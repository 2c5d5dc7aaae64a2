"""kgnorm.linking"""
